#include "common/file_util.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

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

Status WriteFileAtomically(const std::string& path, std::string_view data, mode_t mode) {
  // One temporary name per process: two processes replacing the same file
  // never write into each other's temporary file.
  const std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
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

}  // namespace dlq
