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
