// FileSystem: the filesystem calls under the file:// object store, behind an
// interface (leveldb's Env) so tests can make fsync, rename, a full disk or
// short writes fail on command (testing/fault_injection_file_system.h).
// Paths are absolute. Errors name the operation and the path and carry the
// errno text; their codes follow ErrnoStatus. Implementations are thread-safe;
// a WritableFile is used by one thread at a time.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"

namespace dlq {

// "{what} {path}: {strerror(err)}" with the code a caller can act on:
// kPermissionDenied (EACCES, EPERM, EROFS), kNotFound (ENOENT),
// kAlreadyExists (EEXIST), kFailedPrecondition (ENOTDIR, EISDIR,
// ENAMETOOLONG), kUnavailable (ENOSPC, EDQUOT, EIO), else kInternal.
Status ErrnoStatus(int err, std::string_view what, const std::string& path);

struct FileInfo {
  bool is_dir = false;
  bool is_regular = false;
  bool is_symlink = false;  // only from LinkStat and ListDir
  uint64_t size = 0;
  SystemTime modified;
};

struct DirEntry {
  std::string name;  // not "." or ".."
  FileInfo info;     // of the entry itself (symbolic links are not followed)
};

class WritableFile {
 public:
  virtual ~WritableFile() = default;  // closes, ignoring errors, if Close was not called
  // Writes a prefix of `data` and returns its length: at least 1 byte for
  // non-empty data, possibly fewer than all (a short write).
  virtual Result<size_t> Write(std::string_view data) = 0;
  virtual Status Sync() = 0;  // fsync
  // A failed close can mean lost writes. Call at most once.
  virtual Status Close() = 0;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  // Creates `path`, which must not exist (O_EXCL; an existing symbolic link
  // counts), for writing, with permission bits `mode` (less the umask).
  virtual Result<std::unique_ptr<WritableFile>> CreateFile(const std::string& path, mode_t mode) = 0;
  // Up to `length` bytes from `offset` (fewer only at the end of the file).
  virtual Result<std::string> Read(const std::string& path, uint64_t offset, size_t length) = 0;
  // Follows symbolic links.
  virtual Result<FileInfo> Stat(const std::string& path) = 0;
  // Of `path` itself: a symbolic link is reported, not followed (lstat).
  virtual Result<FileInfo> LinkStat(const std::string& path) = 0;
  // kNotFound when `dir` is missing.
  virtual Result<std::vector<DirEntry>> ListDir(const std::string& dir) = 0;
  // One directory, with permission bits `mode` (less the umask);
  // kAlreadyExists when anything of that name exists.
  virtual Status CreateDir(const std::string& path, mode_t mode) = 0;
  // fsync of a directory, making renames and creations in it durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  // Moves `from` to `to`. With no_replace, fails with kAlreadyExists when
  // `to` exists (renameat2 RENAME_NOREPLACE, or link+unlink where the
  // filesystem lacks it); otherwise replaces `to`.
  virtual Status Rename(const std::string& from, const std::string& to, bool no_replace) = 0;
  // Unlinks a file; kNotFound when missing.
  virtual Status Remove(const std::string& path) = 0;
  // Bytes an unprivileged writer may still use on the filesystem that holds
  // `path` (statvfs f_bavail * f_frsize).
  virtual Result<uint64_t> FreeSpace(const std::string& path) = 0;
};

// The real filesystem (POSIX calls). Default() lives for the whole process.
class PosixFileSystem final : public FileSystem {
 public:
  static PosixFileSystem& Default();

  Result<std::unique_ptr<WritableFile>> CreateFile(const std::string& path, mode_t mode) override;
  Result<std::string> Read(const std::string& path, uint64_t offset, size_t length) override;
  Result<FileInfo> Stat(const std::string& path) override;
  Result<FileInfo> LinkStat(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& dir) override;
  Status CreateDir(const std::string& path, mode_t mode) override;
  Status SyncDir(const std::string& dir) override;
  Status Rename(const std::string& from, const std::string& to, bool no_replace) override;
  Status Remove(const std::string& path) override;
  Result<uint64_t> FreeSpace(const std::string& path) override;
};

// Forwards every call to another FileSystem (leveldb's EnvWrapper): a fake
// overrides only the calls it changes. `target` must outlive the wrapper.
class FileSystemWrapper : public FileSystem {
 public:
  explicit FileSystemWrapper(FileSystem& target) : target_(target) {}

  Result<std::unique_ptr<WritableFile>> CreateFile(const std::string& path, mode_t mode) override {
    return target_.CreateFile(path, mode);
  }
  Result<std::string> Read(const std::string& path, uint64_t offset, size_t length) override {
    return target_.Read(path, offset, length);
  }
  Result<FileInfo> Stat(const std::string& path) override { return target_.Stat(path); }
  Result<FileInfo> LinkStat(const std::string& path) override { return target_.LinkStat(path); }
  Result<std::vector<DirEntry>> ListDir(const std::string& dir) override { return target_.ListDir(dir); }
  Status CreateDir(const std::string& path, mode_t mode) override { return target_.CreateDir(path, mode); }
  Status SyncDir(const std::string& dir) override { return target_.SyncDir(dir); }
  Status Rename(const std::string& from, const std::string& to, bool no_replace) override {
    return target_.Rename(from, to, no_replace);
  }
  Status Remove(const std::string& path) override { return target_.Remove(path); }
  Result<uint64_t> FreeSpace(const std::string& path) override { return target_.FreeSpace(path); }

 protected:
  FileSystem& target() { return target_; }

 private:
  FileSystem& target_;
};

}  // namespace dlq
