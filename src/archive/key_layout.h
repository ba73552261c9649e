// Object key templates for archive objects. A parsed KeyTemplate is
// immutable and thread-safe. Dates are rendered in UTC.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace dlq {

inline constexpr std::string_view kDefaultKeyTemplate =
    "{prefix}/{queue}/{yyyymmdd}/{queue}-{hhmmss}-{batch_id}.json.gz";
inline constexpr std::string_view kHiveKeyTemplate =
    "{prefix}/queue={queue}/dt={yyyy-mm-dd}/{queue}-{hhmmss}-{batch_id}.json.gz";
inline constexpr std::string_view kDefaultKeyPrefix = "dlq-archive";

struct KeyFields {
  std::string prefix;  // leading/trailing '/' are ignored; may be empty
  std::string queue;
  std::string region;
  std::string account_id;
  SystemTime time;  // batch start time, rendered in UTC
  std::string batch_id;
};

class KeyTemplate {
 public:
  // Placeholders: {prefix} {queue} {region} {account_id} {yyyymmdd} {yyyy} {mm}
  // {dd} {hh} {hhmmss} {yyyy-mm-dd} {batch_id}. kInvalidArgument for an
  // unknown placeholder, an unbalanced brace, a template without {batch_id}
  // (keys must be collision-proof across archivers), a control character, an
  // empty segment ('//', a leading or trailing '/'), or a segment that is or
  // can render as "." or ".." (dots with only {prefix}, {region} or
  // {account_id}, which may be empty); the message names the segment.
  static Result<KeyTemplate> Parse(std::string_view text);
  static KeyTemplate Default();

  // The object key; runs of '/' are collapsed and no key starts or ends
  // with '/'. With a prefix that passes ValidateKeyPath (or is empty) and a
  // queue name of SQS's characters, the key passes it too.
  std::string Render(const KeyFields& fields) const;
  // The longest '/'-terminated key prefix shared by every key of this
  // queue (the template rendered up to the first time or batch placeholder),
  // for listing one queue's objects; "" when the template starts with one.
  std::string QueuePrefix(const KeyFields& fields) const;

  const std::string& text() const { return text_; }

  // The parsed template, for readers that match keys against it.
  enum class Part {
    kLiteral,
    kPrefix,
    kQueue,
    kRegion,
    kAccountId,
    kYyyymmdd,
    kYyyy,
    kMm,
    kDd,
    kHh,
    kHhmmss,
    kIsoDate,
    kBatchId
  };
  struct Segment {
    Part part;
    std::string literal;  // kLiteral only
  };
  const std::vector<Segment>& segments() const { return segments_; }

 private:
  std::string RenderUpTo(const KeyFields& fields, bool stop_at_variable) const;

  std::string text_;
  std::vector<Segment> segments_;
};

// Checks that `path`, a '/'-separated destination prefix or object key,
// names exactly one place: no empty, "." or ".." segment (HTTP clients remove
// dot segments after signing and file systems resolve them, so the object
// would land elsewhere than the key says) and no control character.
// kInvalidArgument "{what} segment '..' is not allowed (...)", control bytes
// shown as \xHH.
Status ValidateKeyPath(std::string_view path, std::string_view what);

// A fresh batch id: 16 random lower-case hex characters.
std::string NewBatchId();

}  // namespace dlq
