#include "common/file_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/crypto.h"

namespace dlq {
namespace {

Status Errno(std::string_view what, const std::string& path) {
  return InvalidArgument(fmt::format("{} {}: {}", what, path, std::strerror(errno)));
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

Result<FileModes> ParseFileModes(std::string_view octal) {
  auto bad = [&](std::string_view why) {
    return InvalidArgument(
        fmt::format("file mode '{}' {}: use an octal mode such as 0600 (the default) or 0640", octal, why));
  };
  std::string_view digits = octal;
  if (digits.size() == 4 && digits.front() == '0') digits.remove_prefix(1);
  if (digits.size() != 3 || digits.find_first_not_of("01234567") != std::string_view::npos) {
    return bad("is not three octal digits");
  }
  mode_t file = 0;
  for (char c : digits) file = file * 8 + static_cast<mode_t>(c - '0');
  if ((file & 0111) != 0) return bad("has execute bits (archive files are data)");
  if ((file & 0600) != 0600) return bad("must keep read and write for the owner");
  FileModes modes;
  modes.file = file;
  modes.dir = file | ((file & 0444) >> 2);
  return modes;
}

Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode) {
  // A fresh name each time, created exclusively: two processes never write
  // into each other's temporary file, and a link planted at a guessable
  // name is not followed (the name is taken: another one is tried).
  std::string tmp;
  int fd = -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    tmp = fmt::format("{}.tmp.{}.{}", path, ::getpid(), RandomHex(8));
    fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return Errno("create", tmp);
  Status st = WriteAll(fd, data, tmp);
  if (st.ok() && ::fsync(fd) != 0) st = Errno("fsync", tmp);
  if (::close(fd) != 0 && st.ok()) st = Errno("close", tmp);
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    Status err = Errno("rename into", path);
    ::unlink(tmp.c_str());
    return err;
  }
  int dir = ::open(DirectoryOf(path).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) return Errno("open the directory of", path);
  int rc = ::fsync(dir);
  ::close(dir);
  if (rc != 0) return Errno("fsync the directory of", path);
  return Status::Ok();
}

Result<std::string> ReadFileAtMost(const std::string& path, uint64_t max_bytes, std::string_view what) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return NotFound(fmt::format("{} {}: no such file", what, path));
    return Errno(fmt::format("open {}", what), path);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status err = Errno(fmt::format("stat {}", what), path);
    ::close(fd);
    return err;
  }
  auto too_large = [&](uint64_t size) {
    return InvalidArgument(
        fmt::format("{} {} is {} bytes, more than the {} bytes one may take; not read", what, path, size, max_bytes));
  };
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return InvalidArgument(fmt::format("{} {}: not a regular file", what, path));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    ::close(fd);
    return too_large(static_cast<uint64_t>(st.st_size));
  }
  std::string out;
  out.resize(static_cast<size_t>(st.st_size));
  size_t done = 0;
  for (;;) {
    if (done == out.size()) {
      if (out.size() > max_bytes) break;  // it grew past the limit while being read
      out.resize(std::min<uint64_t>(max_bytes + 1, out.size() + 65536));
    }
    ssize_t n = ::read(fd, out.data() + done, out.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status err = Errno(fmt::format("read {}", what), path);
      ::close(fd);
      return err;
    }
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  ::close(fd);
  out.resize(done);
  if (done > max_bytes) return too_large(done);
  return out;
}

Result<mode_t> MakePrivateDirectories(const std::string& path) {
  if (path.empty()) return InvalidArgument("create directory: empty path");
  // Each missing component, from the top: mkdir 0700, then chmod in case
  // the umask took the owner's bits.
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    const std::string part = slash == std::string::npos ? path : path.substr(0, slash);
    if (!part.empty() && ::mkdir(part.c_str(), 0700) == 0) {
      if (::chmod(part.c_str(), 0700) != 0) return Errno("chmod 0700", part);
    } else if (!part.empty() && errno != EEXIST) {
      return Errno("create directory", part);
    }
    if (slash == std::string::npos) break;
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Errno("stat", path);
  if (!S_ISDIR(st.st_mode)) return InvalidArgument(fmt::format("{} is not a directory", path));
  return static_cast<mode_t>(st.st_mode & 07777);
}

}  // namespace dlq
