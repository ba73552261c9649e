// libFuzzer target: a Lambda on-failure record read from S3
// (replay/lambda_records.h) must never crash, hang or throw, whatever the
// object's key and text. Input: the key, a newline, then the object's text.
// A record read is the text byte for byte, identified by its request id, and
// watched for under that id; a key's time, when it has one, is what its
// name spells.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/time_util.h"
#include "replay/lambda_records.h"
#include "replay/origin_clue.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t eol = input.find('\n');
  const std::string key(input.substr(0, eol));
  const std::string text(eol == std::string_view::npos ? std::string_view() : input.substr(eol + 1));
  if (auto t = dlq::LambdaRecordKeyTime(key)) {
    // The name's first 19 characters, with ':' for '.', are the time's ISO 8601 form.
    const std::string iso = dlq::FormatIso8601(*t);
    const std::string name = key.substr(key.rfind('/') == std::string::npos ? 0 : key.rfind('/') + 1);
    if (iso.substr(0, 4) != name.substr(0, 4)) __builtin_trap();
  }
  auto record = dlq::LambdaRecordFromObject("fuzz-bucket", key, text);
  if (!record.ok()) return 0;
  if (record->message_id.empty() || record->body != text) __builtin_trap();
  bool watched = false;
  for (const std::string& k : dlq::RefailureKeys(*record)) watched |= k == "lambda-request:" + record->message_id;
  if (!watched) __builtin_trap();
  return 0;
}
