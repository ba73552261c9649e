// libFuzzer target for where archives go: ParseDestination (the --to, --from
// and `destination` URL), KeyTemplate::Parse (--key-template, the config's
// key_template) and ParseFileModes (DLQ_FILE_MODE). Input: the URL, a line
// break, the template, a line break, the mode. An accepted s3:// URL has a
// bucket and prefix that name one place and parse back to themselves; an
// accepted template renders, under that prefix or the default one and with
// empty region and account, a key that names one place (ValidateKeyPath); an
// accepted mode keeps the owner's read and write and has no execute bit on
// files.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "archive/destination.h"
#include "archive/key_layout.h"
#include "common/file_util.h"

namespace {

std::string_view NextLine(std::string_view& in) {
  size_t nl = in.find('\n');
  std::string_view line = in.substr(0, nl);
  in = nl == std::string_view::npos ? std::string_view() : in.substr(nl + 1);
  return line;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::string_view uri = NextLine(in);
  const std::string_view text = NextLine(in);
  const std::string_view mode = in;

  std::string prefix(dlq::kDefaultKeyPrefix);
  auto dest = dlq::ParseDestination(uri);
  if (dest.ok() && dest->scheme == "s3") {
    if (!dlq::ValidateKeyPath(dest->bucket, "bucket").ok()) std::abort();
    if (!dest->prefix.empty() && !dlq::ValidateKeyPath(dest->prefix, "prefix").ok()) std::abort();
    auto again = dlq::ParseDestination("s3://" + dest->bucket + "/" + dest->prefix);
    if (!again.ok() || again->bucket != dest->bucket || again->prefix != dest->prefix) std::abort();
    prefix = dlq::ArchivePrefix(*dest);
  }

  auto tmpl = dlq::KeyTemplate::Parse(text);
  if (tmpl.ok()) {
    for (const std::string& p : {prefix, std::string()}) {
      dlq::KeyFields fields{p, "orders-dlq.fifo", "", "", dlq::SystemTime(), "0123456789abcdef"};
      std::string key = tmpl->Render(fields);
      if (!dlq::ValidateKeyPath(key, "key").ok()) std::abort();
    }
  }

  auto modes = dlq::ParseFileModes(mode);
  if (modes.ok()) {
    if ((modes->file & 0600) != 0600 || (modes->file & 0111) != 0 || (modes->dir & 0700) != 0700) std::abort();
    if ((modes->dir & ~modes->file) != ((modes->file & 0444) >> 2)) std::abort();
  }
  return 0;
}
