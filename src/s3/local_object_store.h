// LocalObjectStore: ObjectStore on a local directory (file:///DIR), for
// tests, demos and air-gapped use. Keys map to paths under the root; a key
// may not be absolute or contain empty, "." or ".." segments.
//
// Nothing below the root is reached through a symbolic link (the root itself
// may be one): Put refuses to write through a link, before writing anything;
// Get, Head and Delete refuse to go through one (kFailedPrecondition naming
// the link); List leaves links and special files out and reports each in
// ListPage::skipped. So what Put stored is what List shows.
// Files are created with FileModes::file and directories with ::dir
// (default 0600 and 0700).
//
// Put writes a hidden temporary file next to the target, fsyncs it, moves it
// into place (create-only: renameat2(RENAME_NOREPLACE), or link()+unlink()
// where that is unsupported) and fsyncs the directory, so a stored object is
// durable and complete. Temporary files are removed on failure and never
// listed. ETags are the MD5 hex of the content (Head only; empty in List).
// Every filesystem call goes through a FileSystem (s3/file_system.h; the
// real one by default), so tests can inject fsync, rename and disk-full
// failures. Thread-safe: the store holds no mutable state.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "common/file_util.h"
#include "s3/file_system.h"
#include "s3/object_store.h"

namespace dlq {

class LocalObjectStore final : public ObjectStore {
 public:
  static constexpr size_t kDefaultPageSize = 1000;

  // `root` is a directory path or a file:// URL. Fails with kNotFound when
  // the directory is missing (unless `create`), kFailedPrecondition when it
  // is not a directory, kPermissionDenied when it is not accessible.
  // Open checks the directory with POSIX calls (creating it with
  // `modes.dir`); the store then uses `fs` (nullptr: the real filesystem),
  // which must outlive it.
  static Result<std::unique_ptr<LocalObjectStore>> Open(std::string_view root, bool create = false,
                                                        FileSystem* fs = nullptr, FileModes modes = {});

  // No checks: errors surface on first use. `root` must be absolute; `fs`
  // (nullptr: the real filesystem) must outlive the store.
  explicit LocalObjectStore(std::string root, size_t page_size = kDefaultPageSize, FileSystem* fs = nullptr,
                            FileModes modes = {});

  Status Put(const std::string& key, std::string_view data, const PutOptions& options) override;
  Result<std::string> Get(const std::string& key,
                          std::optional<std::pair<uint64_t, uint64_t>> range = std::nullopt) override;
  Status GetInto(const std::string& key, std::string& out) override;
  Result<ObjectInfo> Head(const std::string& key) override;
  // Sorted by key bytes like S3; the token is the last key or prefix returned.
  Result<ListPage> List(const std::string& prefix, const std::string& delimiter, const std::string& token) override;
  // Deleting a missing key succeeds, as on S3.
  Status Delete(const std::string& key) override;
  // The root exists, is a directory, and a file can be created in it.
  Result<DestinationCheck> CheckWritable() override;
  std::string Describe() const override { return "file://" + root_; }
  // About the local disk and the directory (with the free space left when
  // the disk is full or failing), never S3.
  PutFailureAdvice AdvisePutFailure(const Status& failure) const override;

  const std::string& root() const { return root_; }

 private:
  Status ReadInto(const std::string& op, const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range,
                  std::string& out);
  std::string PathOf(const std::string& key) const { return root_ + "/" + key; }
  // What `key` holds, found component by component without following a
  // link: kFailedPrecondition naming a link (and, when `link` is set, its
  // key there), kNotFound when a component is missing or not a directory.
  Result<FileInfo> LinkFreeStat(std::string_view op, const std::string& key, std::string* link = nullptr);

  std::string root_;  // absolute, without trailing '/'
  size_t page_size_;
  FileSystem& fs_;
  FileModes modes_;
};

// Prefix of the hidden temporary files Put creates.
inline constexpr std::string_view kLocalStoreTempPrefix = ".dlq-tmp-";

}  // namespace dlq
