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

#include "common/byte_size.h"
#include "common/crypto.h"
#include "common/strings.h"

namespace dlq {
namespace {

namespace fs = std::filesystem;

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

// Creates every directory of `rel_dir` (a '/'-separated path) under root,
// syncing the parent of each one it creates.
Status MakeDirs(FileSystem& fs, const std::string& root, std::string_view rel_dir) {
  std::string path = root;
  for (std::string_view segment : Split(rel_dir, '/')) {
    std::string parent = path;
    path += '/';
    path += segment;
    Status st = fs.CreateDir(path);
    if (st.ok()) {
      DLQ_RETURN_IF_ERROR(fs.SyncDir(parent));
      continue;
    }
    if (st.code() != ErrorCode::kAlreadyExists) return st;
    auto info = fs.Stat(path);
    if (info.ok() && info->is_dir) continue;
    return FailedPrecondition(fmt::format("create directory {}: a file of that name exists", path));
  }
  return Status::Ok();
}

// Writes all of `data`, however short each write is.
Status WriteAll(WritableFile& file, std::string_view data) {
  while (!data.empty()) {
    auto n = file.Write(data);
    if (!n.ok()) return n.status();
    data.remove_prefix(std::min(*n, data.size()));
  }
  return Status::Ok();
}

struct Entry {
  std::string name;  // key or common prefix
  bool is_prefix = false;
  ObjectInfo info;
};

// Adds every regular file under `dir` (whose key prefix is `rel`) to `files`.
Status Walk(FileSystem& fs, const std::string& dir, const std::string& rel,
            std::vector<std::pair<std::string, FileInfo>>& files) {
  auto entries = fs.ListDir(dir);
  if (!entries.ok()) {
    ErrorCode code = entries.status().code();
    if (code == ErrorCode::kNotFound || code == ErrorCode::kFailedPrecondition) return Status::Ok();
    return entries.status();
  }
  for (DirEntry& e : *entries) {
    if (StartsWith(e.name, kLocalStoreTempPrefix)) continue;
    if (e.info.is_dir) {
      DLQ_RETURN_IF_ERROR(Walk(fs, dir + "/" + e.name, rel + e.name + "/", files));
    } else if (e.info.is_regular) {
      files.emplace_back(rel + e.name, e.info);
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<LocalObjectStore>> LocalObjectStore::Open(std::string_view root, bool create, FileSystem* fs) {
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
  return std::make_unique<LocalObjectStore>(dir, kDefaultPageSize, fs);
}

LocalObjectStore::LocalObjectStore(std::string root, size_t page_size, FileSystem* fs)
    : root_(std::move(root)),
      page_size_(page_size == 0 ? kDefaultPageSize : page_size),
      fs_(fs != nullptr ? *fs : PosixFileSystem::Default()) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

Status LocalObjectStore::Put(const std::string& key, std::string_view data, const PutOptions& options) {
  DLQ_RETURN_IF_ERROR(ValidateKey("put", key));
  const std::string path = PathOf(key);
  const size_t slash = key.rfind('/');
  const std::string dir = slash == std::string::npos ? root_ : root_ + "/" + key.substr(0, slash);
  if (slash != std::string::npos) {
    DLQ_RETURN_IF_ERROR(MakeDirs(fs_, root_, std::string_view(key).substr(0, slash)).WithContext("put " + path));
  }
  // Create-only: an existing object with other content is never replaced;
  // one with the same content is a retried put whose first attempt landed.
  auto exists = [&]() -> Status {
    auto info = fs_.Stat(path);
    if (info.ok() && info->is_regular && info->size == data.size()) {
      auto held = fs_.Read(path, 0, data.size());
      if (held.ok() && *held == data) return Status::Ok();
    }
    return AlreadyExists(fmt::format("put {}: object already exists", path));
  };
  if (options.create_only && fs_.Stat(path).ok()) return exists();

  const std::string tmp = fmt::format("{}/{}{}", dir, kLocalStoreTempPrefix, RandomHex(8));
  auto file = fs_.CreateFile(tmp);
  if (!file.ok()) return file.status().WithContext("put " + path);

  auto write_and_move = [&]() -> Status {
    DLQ_RETURN_IF_ERROR(WriteAll(**file, data));
    DLQ_RETURN_IF_ERROR((*file)->Sync());
    Status closed = (*file)->Close();
    file->reset();
    DLQ_RETURN_IF_ERROR(closed);
    Status moved = fs_.Rename(tmp, path, options.create_only);
    if (moved.code() == ErrorCode::kAlreadyExists) return exists();  // created meanwhile
    return moved;
  };
  Status st = write_and_move();
  if (!st.ok()) {
    file->reset();
    (void)fs_.Remove(tmp);  // best effort: temporary files are never listed
    return st.WithContext("put " + path);
  }
  return fs_.SyncDir(dir).WithContext("put " + path);
}

PutFailureAdvice LocalObjectStore::AdvisePutFailure(const Status& failure) const {
  PutFailureAdvice advice{"writing to the local disk", ""};
  constexpr std::string_view kStay = "; the messages stay in the DLQ";
  if (failure.code() == ErrorCode::kUnavailable) {  // ENOSPC, EDQUOT, EIO
    Result<uint64_t> free = fs_.FreeSpace(root_);
    advice.hint = fmt::format(
        "the disk under {} is full, over quota or failing ({}): free space there or archive to another "
        "directory, then run again{}",
        root_, free.ok() ? FormatByteSize(*free) + " free" : "free space unknown", kStay);
  } else if (failure.code() == ErrorCode::kPermissionDenied) {  // EACCES, EPERM, EROFS
    advice.hint = fmt::format(
        "{} cannot be written (its permissions, or a read-only filesystem): fix that or archive to another "
        "directory, then run again{}",
        root_, kStay);
  } else {
    advice.hint = fmt::format("check {} and the disk under it, then run again{}", root_, kStay);
  }
  return advice;
}

Result<std::string> LocalObjectStore::Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range) {
  std::string out;
  DLQ_RETURN_IF_ERROR(ReadInto("get", key, range, out));
  return out;
}

Status LocalObjectStore::GetInto(const std::string& key, std::string& out) {
  return ReadInto("get", key, std::nullopt, out);
}

// Reads through the FileSystem seam (so read faults can be injected); `out`
// takes the bytes read.
Status LocalObjectStore::ReadInto(const std::string& op, const std::string& key,
                                  std::optional<std::pair<uint64_t, uint64_t>> range, std::string& out) {
  DLQ_RETURN_IF_ERROR(ValidateKey(op, key));
  const std::string path = PathOf(key);
  auto info = fs_.Stat(path);
  if (!info.ok()) return info.status().WithContext("get");
  if (!info->is_regular) return NotFound(fmt::format("get {}: not an object", path));
  const uint64_t size = info->size;
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
  auto read = fs_.Read(path, first, static_cast<size_t>(last - first + 1));
  if (!read.ok()) return read.status().WithContext(op);
  if (read->size() != last - first + 1) return DataLoss(fmt::format("{} {}: file shrank while reading", op, path));
  out = std::move(*read);
  return Status::Ok();
}

Result<ObjectInfo> LocalObjectStore::Head(const std::string& key) {
  DLQ_RETURN_IF_ERROR(ValidateKey("head", key));
  const std::string path = PathOf(key);
  auto st = fs_.Stat(path);
  if (!st.ok()) return st.status().WithContext("head");
  if (!st->is_regular) return NotFound(fmt::format("head {}: not an object", path));
  Md5Hasher md5;
  constexpr size_t kChunk = 1 << 16;
  for (uint64_t offset = 0;;) {
    auto chunk = fs_.Read(path, offset, kChunk);
    if (!chunk.ok()) return chunk.status().WithContext("head");
    md5.Update(*chunk);
    offset += chunk->size();
    if (chunk->size() < kChunk) break;
  }
  ObjectInfo info;
  info.key = key;
  info.size = st->size;
  info.etag = HexEncode(md5.Finish());
  info.last_modified = st->modified;
  return info;
}

Result<ListPage> LocalObjectStore::List(const std::string& prefix, const std::string& delimiter,
                                        const std::string& token) {
  auto root_info = fs_.Stat(root_);
  if (!root_info.ok()) return root_info.status().WithContext("list: local store directory");
  if (!root_info->is_dir) return FailedPrecondition(fmt::format("list {}: not a directory", root_));

  // Walk only the deepest directory the prefix names completely.
  const size_t slash = prefix.rfind('/');
  std::string start_rel = slash == std::string::npos ? "" : prefix.substr(0, slash + 1);
  std::vector<std::pair<std::string, FileInfo>> files;
  DLQ_RETURN_IF_ERROR(
      Walk(fs_, start_rel.empty() ? root_ : root_ + "/" + start_rel.substr(0, start_rel.size() - 1), start_rel, files));

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
    e.info.size = st.size;
    e.info.last_modified = st.modified;
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
  if (auto info = fs_.Stat(path); info.ok() && info->is_dir) return Status::Ok();  // not an object
  if (Status st = fs_.Remove(path); !st.ok()) {
    // Missing, or a parent is a file (ENOTDIR): nothing to delete, as on S3.
    if (st.code() == ErrorCode::kNotFound || st.code() == ErrorCode::kFailedPrecondition) return Status::Ok();
    return st.WithContext("delete");
  }
  const size_t slash = key.rfind('/');
  return fs_.SyncDir(slash == std::string::npos ? root_ : root_ + "/" + key.substr(0, slash))
      .WithContext("delete " + path);
}

}  // namespace dlq

namespace dlq {

Result<DestinationCheck> LocalObjectStore::CheckWritable() {
  auto info = fs_.Stat(root_);
  if (!info.ok()) {
    if (info.status().code() == ErrorCode::kNotFound) {
      return NotFound(fmt::format("directory {} does not exist: create it first (mkdir -p {})", root_, root_));
    }
    return info.status().WithContext("archive directory");
  }
  if (!info->is_dir) return FailedPrecondition(fmt::format("archive destination {} is not a directory", root_));
  // access() answers for the real uid and ignores read-only mounts: create
  // and remove a probe file instead.
  std::string probe = fmt::format("{}/{}probe-{}", root_, kLocalStoreTempPrefix, ::getpid());
  auto file = fs_.CreateFile(probe);
  if (!file.ok()) return file.status().WithContext(fmt::format("cannot create files in archive directory {}", root_));
  (void)(*file)->Close();
  file->reset();
  (void)fs_.Remove(probe);
  return DestinationCheck{};
}

}  // namespace dlq
