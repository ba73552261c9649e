#include "app/show_command.h"

#include <fmt/format.h>
#include <rapidjson/error/en.h>
#include <rapidjson/memorystream.h>
#include <rapidjson/prettywriter.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>

#include <CLI/CLI.hpp>
#include <utility>

#include "app/cause_flags.h"
#include "app/command.h"
#include "causes/sidecar.h"
#include "common/count_noun.h"
#include "common/crypto.h"
#include "common/text.h"
#include "common/time_util.h"
#include "query/filter.h"
#include "query/fingerprint.h"
#include "query/scan.h"

namespace dlq {
namespace {

bool IsUtf8Text(std::string_view s) {
  // An archive record's body is text unless it was stored as body_base64;
  // rapidjson's validating reader would reject it either way.
  size_t i = 0;
  while (i < s.size()) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

// Every value is shown terminal-safe: they all come from the archive.
void Field(std::FILE* out, std::string_view name, std::string_view value) {
  fmt::print(out, "{:<26} {}\n", name, TerminalSafe(value));
}

std::string Time(const std::optional<SystemTime>& t) {
  return t ? FormatIso8601(*t) : "-";
}

// Keeps numbers as written (rapidjson's writer would quote a raw number).
class PrettyNumbersAsWritten : public rapidjson::PrettyWriter<rapidjson::StringBuffer> {
 public:
  using PrettyWriter::PrettyWriter;
  bool RawNumber(const char* str, rapidjson::SizeType length, bool) {
    return RawValue(str, length, rapidjson::kNumberType);
  }
};

}  // namespace

std::optional<std::string> PrettyJson(std::string_view body) {
  size_t first = body.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || (body[first] != '{' && body[first] != '[')) return std::nullopt;
  rapidjson::MemoryStream in(body.data(), body.size());
  rapidjson::StringBuffer buf;
  PrettyNumbersAsWritten writer(buf);
  writer.SetIndent(' ', 2);
  rapidjson::Reader reader;
  constexpr unsigned kFlags =
      rapidjson::kParseValidateEncodingFlag | rapidjson::kParseNumbersAsStringsFlag | rapidjson::kParseStopWhenDoneFlag;
  if (reader.Parse<kFlags>(in, writer).IsError()) return std::nullopt;
  // Anything but whitespace after the value means it was not one JSON document.
  if (body.find_first_not_of(" \t\r\n", in.Tell()) != std::string_view::npos) return std::nullopt;
  return std::string(buf.GetString(), buf.GetSize());
}

namespace {

// The scan `show` runs, or nullopt (after saying why on `err`) when the flags
// do not make one.
std::optional<ScanOptions> ShowScanOptions(const ShowCommandOptions& options, const std::atomic<bool>* stop,
                                           std::FILE* err) {
  if (options.message_id.empty() && options.fingerprint.empty()) {
    fmt::print(err, "error: show: name a MESSAGE_ID or a --fingerprint ID\n");
    return std::nullopt;
  }
  FilterFlags group_flags;
  group_flags.fingerprint = options.fingerprint;
  group_flags.fingerprint_fields = options.fingerprint_fields;
  Result<Filter> group = BuildFilter(group_flags, SystemTime{});
  if (!group.ok()) {
    fmt::print(err, "error: show: {}\n", TerminalSafe(group.status().message()));
    return std::nullopt;
  }
  if (options.output != "text" && options.output != "json") {
    fmt::print(err, "error: show: --output '{}': must be text or json\n", TerminalSafe(options.output));
    return std::nullopt;
  }
  if (options.raw && options.output != "text") {
    fmt::print(err, "error: show: --raw prints the body alone; it does not combine with --output json\n");
    return std::nullopt;
  }
  Result<ArchiveLayouts> layouts = ParseLayouts(options.source);
  if (!layouts.ok()) {
    fmt::print(err, "error: show: {}\n", TerminalSafe(layouts.status().message()));
    return std::nullopt;
  }
  Result<size_t> memory = ParseScanMemory(options.source);
  if (!memory.ok()) {
    fmt::print(err, "error: show: {}\n", memory.status().message());
    return std::nullopt;
  }
  ScanOptions scan;
  scan.memory_budget_bytes = *memory;
  scan.filter = std::move(*group);
  if (!options.message_id.empty()) scan.filter.ids = {options.message_id};
  scan.filter.queues = options.queues;
  scan.layouts = std::move(*layouts);
  scan.parallelism = options.source.parallelism;
  scan.deduplicate = false;  // every copy, to say where they all are
  scan.stop = stop;
  return scan;
}

// The record `show` prints and every place the archive holds a copy of it.
struct Found {
  std::optional<ArchiveRecord> first;
  std::vector<std::string> locations;
};

// By message id: the first copy read, then where the others are. By group
// alone: the group's earliest message, whatever order the scan reads in.
Result<ScanStats> FindRecord(ObjectStore& store, const Destination& from, const ScanOptions& scan, bool by_group,
                             Found& found) {
  const std::string uri = KeyUriPrefix(from);
  auto earlier = [](const ArchiveRecord& a, const ArchiveRecord& b) {
    return std::make_pair(!a.sent_at.has_value(), a.sent_at.value_or(SystemTime{})) <
               std::make_pair(!b.sent_at.has_value(), b.sent_at.value_or(SystemTime{})) ||
           (a.sent_at == b.sent_at && a.message_id < b.message_id);
  };
  std::optional<ArchiveRecord>& first = found.first;
  std::vector<std::string>& locations = found.locations;
  return ScanArchive(store, from, scan, [&](const ArchiveRecord& r, const RecordLocation& loc) {
    if (by_group && first && r.message_id != first->message_id) {
      if (!earlier(r, *first)) return true;
      first.reset();
      locations.clear();
    }
    if (!first) first = r;
    locations.push_back(fmt::format("{}{} line {}{}", uri, loc.key, loc.line,
                                    r.queue == first->queue ? "" : fmt::format(" (queue {})", r.queue)));
    return true;
  });
}

void PrintMessageAttributes(std::FILE* out, const ArchiveRecord& r) {
  fmt::print(out, "\nmessage attributes ({}):\n", r.message_attributes.size());
  for (const auto& [raw_name, value] : r.message_attributes) {
    const std::string name = TerminalSafe(raw_name), type = TerminalSafe(value.data_type);
    if (value.IsBinary()) {
      fmt::print(out, "  {:<24} {:<14} {}, base64 {}\n", name, type,
                 CountNoun(value.binary_value.size(), "byte", "bytes"), Base64Encode(value.binary_value));
    } else if (IsUtf8Text(value.string_value)) {
      fmt::print(out, "  {:<24} {:<14} {}\n", name, type, TerminalSafe(value.string_value));
    } else {
      fmt::print(out, "  {:<24} {:<14} {}, not UTF-8, base64 {}\n", name, type,
                 CountNoun(value.string_value.size(), "byte", "bytes"), Base64Encode(value.string_value));
    }
  }
}

void PrintBody(std::FILE* out, const ArchiveRecord& r) {
  if (std::optional<std::string> pretty = PrettyJson(r.body)) {
    // The writer puts DEL and C1 characters out raw, even those the body held as JSON escapes.
    fmt::print(out, "\nbody ({}, JSON):\n{}\n", CountNoun(r.body.size(), "byte", "bytes"),
               TerminalSafe(*pretty, TextLines::kMulti));
  } else if (IsUtf8Text(r.body)) {
    fmt::print(out, "\nbody ({}):\n{}\n", CountNoun(r.body.size(), "byte", "bytes"),
               TerminalSafe(r.body, TextLines::kMulti));
  } else {
    fmt::print(out, "\nbody ({}, not UTF-8), base64:\n{}\n", CountNoun(r.body.size(), "byte", "bytes"),
               Base64Encode(r.body));
  }
}

void PrintRecordText(std::FILE* out, const ArchiveRecord& r, const std::vector<std::string>& locations,
                     const FingerprintOptions& fingerprint) {
  Field(out, "message_id", r.message_id);
  Field(out, "queue", r.queue);
  Field(out, "queue_url", r.queue_url.empty() ? "-" : r.queue_url);
  Field(out, "region / account",
        fmt::format("{} / {}", r.region.empty() ? "-" : r.region, r.account_id.empty() ? "-" : r.account_id));
  Field(out, "stored in", locations.front());
  for (size_t i = 1; i < locations.size(); ++i) Field(out, "also archived in", locations[i]);
  Field(out, "sent_at", Time(r.sent_at));
  Field(out, "archived_at", Time(r.archived_at));
  Field(out, "expires_at", Time(r.expires_at));
  Field(out, "receive_count", std::to_string(r.receive_count));
  Field(out, "source_queue_arn", r.source_queue_arn.empty() ? "-" : r.source_queue_arn);
  Field(out, "md5_of_body", r.md5_of_body);
  Field(out, "md5_of_message_attributes", r.md5_of_message_attributes.empty() ? "-" : r.md5_of_message_attributes);
  if (r.extended_client_pointer) Field(out, "extended_client_pointer", "true (the body points to an S3 payload)");
  Field(out, "archiver", fmt::format("{} on {}", r.archiver.version, r.archiver.host));
  const std::string group_key = FailureGroupKey(r, fingerprint);
  Field(out, "failure group", fmt::format("{} {}", GroupId(group_key), group_key));
  fmt::print(out, "\nattributes ({}):\n", r.attributes.size());
  for (const auto& [name, value] : r.attributes) {
    fmt::print(out, "  {:<34} {}\n", TerminalSafe(name), TerminalSafe(value));
  }
  PrintMessageAttributes(out, r);
  PrintBody(out, r);
}

}  // namespace

int RunShowCommand(const ShowCommandOptions& options, ObjectStore& store, const Destination& from, std::FILE* out,
                   std::FILE* err, const std::atomic<bool>* stop) {
  std::optional<ScanOptions> scan = ShowScanOptions(options, stop, err);
  if (!scan) return 2;
  const bool by_group = options.message_id.empty();
  Found found;
  Result<ScanStats> stats = FindRecord(store, from, *scan, by_group, found);
  if (!stats.ok() && stats.status().code() == ErrorCode::kCancelled) {
    fmt::print(err, "show: stopped by a signal while listing the archive; nothing was read\n");
    return 130;
  }
  if (stats.ok() && stats->stopped) {
    fmt::print(err, "show: {}, before the whole archive was read\n", StoppedLine(*stats));
    return 130;
  }
  if (!stats.ok()) {
    fmt::print(err, "error: show: {}\n", TerminalSafe(ReadFailure(stats.status(), from)));
    return 1;
  }
  int damage = ReportDamage(*stats, from, err);
  if (!found.first) {
    std::string what = by_group ? fmt::format("no message of failure group {}", scan->filter.fingerprint)
                                : fmt::format("message {}", TerminalSafe(options.message_id));
    if (!by_group && !scan->filter.fingerprint.empty())
      what += fmt::format(" of failure group {}", scan->filter.fingerprint);
    fmt::print(err, "error: show: {} is not in {}{}\n", what, TerminalSafe(from.uri),
               damage == 0 ? "" : " (some objects could not be read; see the warnings)");
    return damage != 0 ? damage : 1;
  }
  const ArchiveRecord& r = *found.first;
  if (options.raw) {
    std::fwrite(r.body.data(), 1, r.body.size(), out);
    return damage;
  }
  if (options.output == "json") {
    std::string line;
    AppendRecordJson(r, line);
    EscapeJsonForTerminal(line);
    std::fwrite(line.data(), 1, line.size(), out);
    return damage;
  }
  PrintRecordText(out, r, found.locations, scan->filter.fingerprint_options);
  // Why it failed, when the archive's causes sidecar knows (the text is unchanged otherwise).
  auto causes = ReadCauseRecords(store, ArchivePrefix(from), {r.queue});
  if (!causes.ok()) {
    fmt::print(err, "warning: show: its cause could not be read: {}\n", TerminalSafe(causes.status().message()));
  } else if (const CauseRecord* cause = causes->Find(r.queue, r.message_id)) {
    PrintCauseText(out, cause);
  }
  return damage;
}

namespace {

struct ShowFlags {
  ShowCommandOptions options;
  std::string from;
};

Runner AddShowFlags(CLI::App& cmd) {
  auto f = std::make_shared<ShowFlags>();
  cmd.add_option("message_id", f->options.message_id, "the SQS MessageId (required without --fingerprint)");
  cmd.add_option("--fingerprint", f->options.fingerprint, "ID: a failure group; alone: its earliest message");
  cmd.add_option("--fingerprint-fields", f->options.fingerprint_fields, "the JSON fields --fingerprint groups by");
  AddFromFlag(cmd, f->from);
  // One queue per --queue: a following word is the MESSAGE_ID, not a second queue.
  cmd.add_option("--queue", f->options.queues, "look only in this queue (repeatable)")->allow_extra_args(false);
  cmd.add_option("--output", f->options.output, "text or json (the archive line)")
      ->check(CLI::IsMember({"text", "json"}));
  cmd.add_flag("--raw", f->options.raw,
               "print the body alone, byte for byte as stored (text output escapes control characters)")
      ->excludes("--output");
  AddArchiveSourceFlags(cmd, f->options.source);
  AddScanMemoryFlag(cmd, f->options.source);
  return [f](const CommandContext& ctx) {
    if (f->options.message_id.empty() && f->options.fingerprint.empty()) {
      return ctx.usage.Fail("name a MESSAGE_ID or a --fingerprint ID");
    }
    return WithArchive(ctx, f->from, [&](ObjectStore& store, const Destination& from) {
      return RunShowCommand(f->options, store, from, stdout, stderr, &ctx.stop);
    });
  };
}

}  // namespace

Command ShowCommand() {
  return {"show", "print one archived message in full, with where it is stored",
          "Exit codes: 0 found; 1 not found, or the archive cannot be listed; 2 usage error; 3 unreadable objects "
          "or lines were skipped, so a copy may have been missed; 130 stopped by a signal",
          AddShowFlags};
}

}  // namespace dlq
