#include "s3/file_system.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace dlq {
namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

FileInfo InfoOf(const struct stat& st) {
  FileInfo info;
  info.is_dir = S_ISDIR(st.st_mode);
  info.is_regular = S_ISREG(st.st_mode);
  info.is_symlink = S_ISLNK(st.st_mode);
  info.size = static_cast<uint64_t>(st.st_size);
  info.modified = SystemTime(std::chrono::duration_cast<SystemTime::duration>(
      std::chrono::seconds(st.st_mtim.tv_sec) + std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
  return info;
}

class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  Result<size_t> Write(std::string_view data) override {
    for (;;) {
      ssize_t n = ::write(fd_.get(), data.data(), data.size());
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return ErrnoStatus(errno, "write", path_);
    }
  }
  Status Sync() override {
    if (::fsync(fd_.get()) != 0) return ErrnoStatus(errno, "fsync", path_);
    return Status::Ok();
  }
  Status Close() override {
    if (fd_.Close() != 0) return ErrnoStatus(errno, "close", path_);
    return Status::Ok();
  }

 private:
  Fd fd_;
  std::string path_;
};

}  // namespace

Status ErrnoStatus(int err, std::string_view what, const std::string& path) {
  std::string message = fmt::format("{} {}: {}", what, path, std::strerror(err));
  switch (err) {
    case EACCES:
    case EPERM:
    case EROFS: return PermissionDenied(std::move(message));
    case ENOENT: return NotFound(std::move(message));
    case EEXIST: return AlreadyExists(std::move(message));
    case ENOTDIR:
    case EISDIR:
    case ENAMETOOLONG: return FailedPrecondition(std::move(message));
    case ENOSPC:
    case EDQUOT:
    case EIO: return Unavailable(std::move(message));
    default: return Internal(std::move(message));
  }
}

PosixFileSystem& PosixFileSystem::Default() {
  static PosixFileSystem fs;
  return fs;
}

Result<std::unique_ptr<WritableFile>> PosixFileSystem::CreateFile(const std::string& path, mode_t mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
  if (fd < 0) return ErrnoStatus(errno, "create", path);
  return std::unique_ptr<WritableFile>(std::make_unique<PosixWritableFile>(fd, path));
}

Result<std::string> PosixFileSystem::Read(const std::string& path, uint64_t offset, size_t length) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "open", path);
  std::string out(length, '\0');
  size_t done = 0;
  while (done < length) {
    ssize_t n = ::pread(fd.get(), out.data() + done, length - done, static_cast<off_t>(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read", path);
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  out.resize(done);
  return out;
}

Result<FileInfo> PosixFileSystem::Stat(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", path);
  return InfoOf(st);
}

Result<FileInfo> PosixFileSystem::LinkStat(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat", path);
  return InfoOf(st);
}

Result<std::vector<DirEntry>> PosixFileSystem::ListDir(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return ErrnoStatus(errno, "list directory", dir);
  std::vector<DirEntry> out;
  for (;;) {
    errno = 0;
    struct dirent* e = ::readdir(d);
    if (e == nullptr) break;
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::fstatat(::dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno == ENOENT) continue;  // deleted while listing
      int err = errno;
      ::closedir(d);
      std::string path = dir;
      path += '/';
      path += name;
      return ErrnoStatus(err, "stat", path);
    }
    out.push_back(DirEntry{std::move(name), InfoOf(st)});
  }
  int err = errno;
  ::closedir(d);
  if (err != 0) return ErrnoStatus(err, "list directory", dir);
  return out;
}

Status PosixFileSystem::CreateDir(const std::string& path, mode_t mode) {
  if (::mkdir(path.c_str(), mode) != 0) return ErrnoStatus(errno, "create directory", path);
  return Status::Ok();
}

Status PosixFileSystem::SyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "open directory", dir);
  if (::fsync(fd.get()) != 0) return ErrnoStatus(errno, "fsync directory", dir);
  return Status::Ok();
}

Status PosixFileSystem::Rename(const std::string& from, const std::string& to, bool no_replace) {
  if (!no_replace) {
    if (::rename(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "rename into", to);
    return Status::Ok();
  }
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return Status::Ok();
  int err = errno;
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP) return ErrnoStatus(err, "rename into", to);
  // The filesystem lacks RENAME_NOREPLACE: link() fails atomically when `to` exists.
  if (::link(from.c_str(), to.c_str()) != 0) return ErrnoStatus(errno, "link into", to);
  ::unlink(from.c_str());
  return Status::Ok();
}

Status PosixFileSystem::Remove(const std::string& path) {
  if (::unlink(path.c_str()) != 0) return ErrnoStatus(errno, "remove", path);
  return Status::Ok();
}

Result<uint64_t> PosixFileSystem::FreeSpace(const std::string& path) {
  struct statvfs st {};
  if (::statvfs(path.c_str(), &st) != 0) return ErrnoStatus(errno, "statvfs", path);
  return static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
}

}  // namespace dlq
