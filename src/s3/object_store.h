// ObjectStore: where archive objects live (S3 bucket + prefix, or a local
// directory). Implementations are thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace dlq {

struct PutOptions {
  std::string content_type = "application/x-ndjson";
  std::string content_encoding;                 // e.g. "gzip"; empty for none
  std::string sse;                              // "", "AES256" or "aws:kms"
  std::string sse_kms_key_id;                   // with sse == "aws:kms"; empty for the AWS managed key
  std::string storage_class;                    // "", "STANDARD", "STANDARD_IA", "GLACIER_IR", ...
  std::map<std::string, std::string> metadata;  // x-amz-meta-*
  bool create_only = true;                      // If-None-Match: * (never overwrite)
};

struct ObjectInfo {
  std::string key;
  uint64_t size = 0;
  std::string etag;
  SystemTime last_modified;
};

// What CheckWritable learned. `confirmed` is false when the store could not
// tell (e.g. HeadBucket denied for lack of s3:ListBucket): the caller goes on
// and says why in `note`.
struct DestinationCheck {
  bool confirmed = true;
  std::string note;
};

// An entry a listing left out, and why: a file:// store's symbolic links and
// special files. `path` is relative to the store's root, like a key.
struct SkippedEntry {
  std::string path;
  std::string reason;
};

struct ListPage {
  std::vector<ObjectInfo> objects;
  std::vector<std::string> common_prefixes;
  std::string next_token;  // empty when this is the last page
  // Under the prefix (at this level when there is a delimiter); on the first
  // page only.
  std::vector<SkippedEntry> skipped;
};

// What an operator reads when a Put failed: the operation that failed
// ("s3:PutObject") and what to check, for the error of the archive run.
struct PutFailureAdvice {
  std::string operation;
  std::string hint;
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  // Stores `data` under `key` and returns only once it is durable and its
  // integrity was confirmed (Content-MD5 / fsync). With create_only, an
  // existing key holding different content yields kAlreadyExists and nothing
  // is overwritten (a retried put whose first attempt landed succeeds).
  virtual Status Put(const std::string& key, std::string_view data, const PutOptions& options) = 0;
  // Reads an object (or bytes [first, last] of it when range is set).
  virtual Result<std::string> Get(const std::string& key,
                                  std::optional<std::pair<uint64_t, uint64_t>> range = std::nullopt) = 0;
  // Reads a whole object into `out`, reusing its capacity (for readers that
  // fetch many objects in a row). The default calls Get.
  virtual Status GetInto(const std::string& key, std::string& out) {
    Result<std::string> data = Get(key);
    if (!data.ok()) return data.status();
    out = std::move(*data);
    return Status::Ok();
  }
  virtual Result<ObjectInfo> Head(const std::string& key) = 0;
  virtual Result<ListPage> List(const std::string& prefix, const std::string& delimiter, const std::string& token) = 0;
  virtual Status Delete(const std::string& key) = 0;
  // Verifies, without writing, that the destination exists and can take
  // objects: S3 HeadBucket; a directory that exists and is writable. A
  // non-OK status is definite (missing bucket or directory, no permission)
  // and names what to fix; nothing has been touched when it is returned.
  virtual Result<DestinationCheck> CheckWritable() = 0;
  // "s3://bucket" or "file:///dir", for messages.
  virtual std::string Describe() const = 0;
  // The advice for a Put that returned `failure`, by its code and AWS error
  // code. The default speaks of S3 (every S3-compatible store and the
  // fakes); a store elsewhere overrides it. Never contains secrets.
  virtual PutFailureAdvice AdvisePutFailure(const Status& failure) const;
};

// Reads the whole object at `key` when it is at most `max_bytes`: its size
// is looked up first (Head) and a larger object is not fetched
// (kFailedPrecondition naming `what`, the store, the key, the size and the
// limit); the fetch asks for the first max_bytes + 1 bytes only, so an
// object replaced meanwhile cannot make it hold more. Head's and Get's own
// errors are returned as they are.
Result<std::string> GetAtMost(ObjectStore& store, const std::string& key, uint64_t max_bytes, std::string_view what);

}  // namespace dlq
