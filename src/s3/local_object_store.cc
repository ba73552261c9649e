#include "s3/local_object_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <vector>

#include "common/crypto.h"
#include "common/strings.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;

// Maps an errno from a filesystem call to a Status naming the path.
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

Status ValidateKey(std::string_view op, const std::string& key) {
  if (key.empty()) return InvalidArgument(fmt::format("{}: empty key", op));
  if (key.find('\0') != std::string::npos) return InvalidArgument(fmt::format("{}: key contains NUL", op));
  for (std::string_view segment : Split(key, '/')) {
    if (segment.empty() || segment == "." || segment == ".." || StartsWith(segment, kLocalStoreTempPrefix)) {
      return InvalidArgument(
          fmt::format("{} '{}': keys of a local store may not have empty, '.', '..' or '{}' segments", op, key,
                      kLocalStoreTempPrefix));
    }
  }
  return Status::Ok();
}

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the error (a failed close can mean lost writes).
  int Close() {
    int rc = ::close(fd_);
    fd_ = -1;
    return rc;
  }

 private:
  int fd_;
};

Status FsyncDir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "open directory", dir);
  if (::fsync(fd.get()) != 0) return ErrnoStatus(errno, "fsync directory", dir);
  return Status::Ok();
}

// Creates every directory of `rel_dir` (a '/'-separated path) under root,
// fsyncing the parent of each one it creates.
Status MakeDirs(const std::string& root, std::string_view rel_dir) {
  std::string path = root;
  for (std::string_view segment : Split(rel_dir, '/')) {
    std::string parent = path;
    path += '/';
    path += segment;
    if (::mkdir(path.c_str(), 0755) == 0) {
      DLQ_RETURN_IF_ERROR(FsyncDir(parent));
      continue;
    }
    int err = errno;
    if (err == EEXIST) {
      struct stat st;
      if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) continue;
      return FailedPrecondition(fmt::format("create directory {}: a file of that name exists", path));
    }
    return ErrnoStatus(err, "create directory", path);
  }
  return Status::Ok();
}

Status WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "write", path);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return Status::Ok();
}

// Moves tmp to path unless path exists.
Status MoveNoReplace(const std::string& tmp, const std::string& path) {
  if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) return Status::Ok();
  int err = errno;
  if (err == EEXIST) return AlreadyExists(fmt::format("put {}: object already exists", path));
  if (err != EINVAL && err != ENOSYS && err != ENOTSUP) return ErrnoStatus(err, "rename into", path);
  // The filesystem lacks RENAME_NOREPLACE: link() fails atomically when path exists.
  if (::link(tmp.c_str(), path.c_str()) != 0) {
    err = errno;
    if (err == EEXIST) return AlreadyExists(fmt::format("put {}: object already exists", path));
    return ErrnoStatus(err, "link into", path);
  }
  ::unlink(tmp.c_str());
  return Status::Ok();
}

struct Entry {
  std::string name;  // key or common prefix
  bool is_prefix = false;
  ObjectInfo info;
};

// Adds every regular file under `dir` (whose key prefix is `rel`) to `keys`.
Status Walk(const std::string& dir, const std::string& rel, std::vector<std::pair<std::string, struct stat>>& files) {
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) {
    if (ec == std::errc::no_such_file_or_directory || ec == std::errc::not_a_directory) return Status::Ok();
    return ErrnoStatus(ec.value(), "list directory", dir);
  }
  for (; it != fs::directory_iterator(); it.increment(ec)) {
    std::string name = it->path().filename().string();
    if (StartsWith(name, kLocalStoreTempPrefix)) continue;
    std::string path = dir + "/" + name;
    struct stat st;
    if (::lstat(path.c_str(), &st) != 0) {
      if (errno == ENOENT) continue;  // deleted while listing
      return ErrnoStatus(errno, "stat", path);
    }
    if (S_ISDIR(st.st_mode)) {
      DLQ_RETURN_IF_ERROR(Walk(path, rel + name + "/", files));
    } else if (S_ISREG(st.st_mode)) {
      files.emplace_back(rel + name, st);
    }
  }
  if (ec) return ErrnoStatus(ec.value(), "list directory", dir);
  return Status::Ok();
}

SystemTime MTime(const struct stat& st) {
  return SystemTime(std::chrono::duration_cast<SystemTime::duration>(std::chrono::seconds(st.st_mtim.tv_sec) +
                                                                     std::chrono::nanoseconds(st.st_mtim.tv_nsec)));
}

}  // namespace

Result<std::unique_ptr<LocalObjectStore>> LocalObjectStore::Open(std::string_view root, bool create) {
  std::string dir(root);
  if (StartsWith(dir, "file://")) dir = dir.substr(7);
  if (dir.empty()) return InvalidArgument(fmt::format("local store '{}': empty directory", root));
  std::error_code ec;
  fs::path abs = fs::absolute(dir, ec);
  if (ec) return InvalidArgument(fmt::format("local store '{}': {}", root, ec.message()));
  dir = abs.lexically_normal().string();
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT && create) {
      fs::create_directories(dir, ec);
      if (ec) return ErrnoStatus(ec.value(), "create local store directory", dir);
      if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus(errno, "local store directory", dir);
    } else {
      return ErrnoStatus(err, "local store directory", dir);
    }
  }
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(fmt::format("local store {}: not a directory", dir));
  if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return ErrnoStatus(errno, "local store directory (needs read, write and search permission)", dir);
  }
  return std::make_unique<LocalObjectStore>(dir);
}

LocalObjectStore::LocalObjectStore(std::string root, size_t page_size)
    : root_(std::move(root)), page_size_(page_size == 0 ? kDefaultPageSize : page_size) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

Status LocalObjectStore::Put(const std::string& key, std::string_view data, const PutOptions& options) {
  DLQ_RETURN_IF_ERROR(ValidateKey("put", key));
  const std::string path = PathOf(key);
  const size_t slash = key.rfind('/');
  const std::string dir = slash == std::string::npos ? root_ : root_ + "/" + key.substr(0, slash);
  if (slash != std::string::npos) {
    DLQ_RETURN_IF_ERROR(MakeDirs(root_, std::string_view(key).substr(0, slash)).WithContext("put " + path));
  }
  if (options.create_only && ::access(path.c_str(), F_OK) == 0) {
    return AlreadyExists(fmt::format("put {}: object already exists", path));
  }

  const std::string tmp = fmt::format("{}/{}{}", dir, kLocalStoreTempPrefix, RandomHex(8));
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644));
  if (fd.get() < 0) return ErrnoStatus(errno, "put: create temporary file in", dir);

  auto write_and_move = [&]() -> Status {
    DLQ_RETURN_IF_ERROR(WriteAll(fd.get(), data, tmp));
    if (::fsync(fd.get()) != 0) return ErrnoStatus(errno, "fsync", tmp);
    if (fd.Close() != 0) return ErrnoStatus(errno, "close", tmp);
    if (options.create_only) return MoveNoReplace(tmp, path);
    if (::rename(tmp.c_str(), path.c_str()) != 0) return ErrnoStatus(errno, "rename into", path);
    return Status::Ok();
  };
  Status st = write_and_move();
  if (!st.ok()) {
    ::unlink(tmp.c_str());
    return st;
  }
  return FsyncDir(dir).WithContext("put " + path);
}

Result<std::string> LocalObjectStore::Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range) {
  std::string out;
  DLQ_RETURN_IF_ERROR(ReadInto("get", key, range, out));
  return out;
}

Status LocalObjectStore::GetInto(const std::string& key, std::string& out) {
  return ReadInto("get", key, std::nullopt, out);
}

// Resizing a reused `out` costs nothing when it shrinks and zero-fills only
// the growth, so a reader of many similar objects pays for no fresh pages.
Status LocalObjectStore::ReadInto(const std::string& op, const std::string& key,
                                  std::optional<std::pair<uint64_t, uint64_t>> range, std::string& out) {
  DLQ_RETURN_IF_ERROR(ValidateKey(op, key));
  const std::string path = PathOf(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "get", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) return NotFound(fmt::format("get {}: not an object", path));
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  uint64_t first = 0;
  uint64_t last = size == 0 ? 0 : size - 1;
  if (range) {
    if (range->first > range->second || range->first >= size) {
      return InvalidArgument(fmt::format("get {}: range bytes={}-{} not satisfiable for {} bytes", path, range->first,
                                         range->second, size));
    }
    first = range->first;
    last = std::min(range->second, size - 1);
  }
  if (size == 0) {
    out.clear();
    return Status::Ok();
  }
  out.resize(last - first + 1);
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd.get(), out.data() + done, out.size() - done, static_cast<off_t>(first + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read", path);
    }
    if (n == 0) return DataLoss(fmt::format("get {}: file shrank while reading", path));
    done += static_cast<size_t>(n);
  }
  return Status::Ok();
}

Result<ObjectInfo> LocalObjectStore::Head(const std::string& key) {
  DLQ_RETURN_IF_ERROR(ValidateKey("head", key));
  const std::string path = PathOf(key);
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return ErrnoStatus(errno, "head", path);
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return ErrnoStatus(errno, "stat", path);
  if (!S_ISREG(st.st_mode)) return NotFound(fmt::format("head {}: not an object", path));
  Md5Hasher md5;
  std::string buf(1 << 16, '\0');
  for (;;) {
    ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus(errno, "read", path);
    }
    if (n == 0) break;
    md5.Update(std::string_view(buf.data(), static_cast<size_t>(n)));
  }
  ObjectInfo info;
  info.key = key;
  info.size = static_cast<uint64_t>(st.st_size);
  info.etag = HexEncode(md5.Finish());
  info.last_modified = MTime(st);
  return info;
}

Result<ListPage> LocalObjectStore::List(const std::string& prefix, const std::string& delimiter,
                                        const std::string& token) {
  struct stat root_st;
  if (::stat(root_.c_str(), &root_st) != 0) return ErrnoStatus(errno, "list: local store directory", root_);
  if (!S_ISDIR(root_st.st_mode)) return FailedPrecondition(fmt::format("list {}: not a directory", root_));

  // Walk only the deepest directory the prefix names completely.
  const size_t slash = prefix.rfind('/');
  std::string start_rel = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
  std::vector<std::pair<std::string, struct stat>> files;
  DLQ_RETURN_IF_ERROR(
      Walk(start_rel.empty() ? root_ : root_ + "/" + start_rel.substr(0, start_rel.size() - 1), start_rel, files));

  std::vector<Entry> entries;
  std::set<std::string> prefixes;
  for (auto& [key, st] : files) {
    if (!StartsWith(key, prefix)) continue;
    if (!delimiter.empty()) {
      size_t pos = key.find(delimiter, prefix.size());
      if (pos != std::string::npos) {
        prefixes.insert(key.substr(0, pos + delimiter.size()));
        continue;
      }
    }
    Entry e;
    e.name = key;
    e.info.key = key;
    e.info.size = static_cast<uint64_t>(st.st_size);
    e.info.last_modified = MTime(st);
    entries.push_back(std::move(e));
  }
  for (const std::string& p : prefixes) entries.push_back(Entry{p, true, {}});
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.name < b.name; });

  ListPage page;
  auto it = token.empty() ? entries.begin()
                          : std::upper_bound(entries.begin(), entries.end(), token,
                                             [](const std::string& t, const Entry& e) { return t < e.name; });
  size_t taken = 0;
  for (; it != entries.end() && taken < page_size_; ++it, ++taken) {
    if (it->is_prefix) {
      page.common_prefixes.push_back(it->name);
    } else {
      page.objects.push_back(std::move(it->info));
    }
  }
  if (it != entries.end()) page.next_token = std::prev(it)->name;
  return page;
}

Status LocalObjectStore::Delete(const std::string& key) {
  DLQ_RETURN_IF_ERROR(ValidateKey("delete", key));
  const std::string path = PathOf(key);
  struct stat st;
  if (::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return Status::Ok();  // not an object
  if (::unlink(path.c_str()) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return Status::Ok();
    return ErrnoStatus(errno, "delete", path);
  }
  const size_t slash = key.rfind('/');
  return FsyncDir(slash == std::string::npos ? root_ : root_ + "/" + key.substr(0, slash))
      .WithContext("delete " + path);
}

}  // namespace dlq

namespace dlq {

Result<DestinationCheck> LocalObjectStore::CheckWritable() {
  struct stat st;
  if (::stat(root_.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT) {
      return NotFound(fmt::format("directory {} does not exist: create it first (mkdir -p {})", root_, root_));
    }
    return ErrnoStatus(err, "archive directory", root_);
  }
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(fmt::format("archive destination {} is not a directory", root_));
  // access() answers for the real uid and ignores read-only mounts: create
  // and remove a probe file instead.
  std::string probe = fmt::format("{}/{}probe-{}", root_, kLocalStoreTempPrefix, ::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return ErrnoStatus(errno, "cannot create files in archive directory", root_);
  ::close(fd);
  ::unlink(probe.c_str());
  return DestinationCheck{};
}

}  // namespace dlq
