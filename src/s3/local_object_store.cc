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

// Refuses going through the symbolic link `link` below the root.
Status LinkRefused(const std::string& link) {
  return FailedPrecondition(
      fmt::format("{} is a symbolic link: the archive neither writes nor reads through links below its root (readers "
                  "would not see what it holds); replace it with a directory",
                  link));
}

constexpr std::string_view kSkippedLink =
    "symbolic link, not followed (the archive neither writes nor reads through links)";
constexpr std::string_view kSkippedSpecial = "not a regular file or directory";

// Creates every directory of `rel_dir` (a '/'-separated path) under root
// with `mode`, syncing the parent of each one it creates. An existing
// component must be a directory, not a link to one.
Status MakeDirs(FileSystem& fs, const std::string& root, std::string_view rel_dir, mode_t mode) {
  std::string path = root;
  for (std::string_view segment : Split(rel_dir, '/')) {
    std::string parent = path;
    path += '/';
    path += segment;
    Status st = fs.CreateDir(path, mode);
    if (st.ok()) {
      DLQ_RETURN_IF_ERROR(fs.SyncDir(parent));
      continue;
    }
    if (st.code() != ErrorCode::kAlreadyExists) return st;
    auto info = fs.LinkStat(path);
    if (info.ok() && info->is_dir) continue;
    if (info.ok() && info->is_symlink) return LinkRefused(path);
    return FailedPrecondition(fmt::format("create directory {}: a file of that name exists", path));
  }
  return Status::Ok();
}

// Creates `dir` and its missing parents with `mode` (mkdir -p).
Status MakeRootDirs(const std::string& dir, mode_t mode) {
  for (size_t slash = dir.find('/', 1);; slash = dir.find('/', slash + 1)) {
    const std::string part = dir.substr(0, slash);
    if (::mkdir(part.c_str(), mode) != 0 && errno != EEXIST) {
      return ErrnoStatus(errno, "create local store directory", part);
    }
    if (slash == std::string::npos) return Status::Ok();
  }
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

// Adds every regular file under `dir` (whose key prefix is `rel`) to `files`,
// and every link and special file to `skipped`.
Status Walk(FileSystem& fs, const std::string& dir, const std::string& rel,
            std::vector<std::pair<std::string, FileInfo>>& files, std::vector<SkippedEntry>& skipped) {
  auto entries = fs.ListDir(dir);
  if (!entries.ok()) {
    ErrorCode code = entries.status().code();
    if (code == ErrorCode::kNotFound || code == ErrorCode::kFailedPrecondition) return Status::Ok();
    return entries.status();
  }
  for (DirEntry& e : *entries) {
    if (StartsWith(e.name, kLocalStoreTempPrefix)) continue;
    if (e.info.is_dir) {
      DLQ_RETURN_IF_ERROR(Walk(fs, dir + "/" + e.name, rel + e.name + "/", files, skipped));
    } else if (e.info.is_regular) {
      files.emplace_back(rel + e.name, e.info);
    } else {
      skipped.push_back({rel + e.name, std::string(e.info.is_symlink ? kSkippedLink : kSkippedSpecial)});
    }
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<LocalObjectStore>> LocalObjectStore::Open(std::string_view root, bool create, FileSystem* fs,
                                                                 FileModes modes) {
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
      DLQ_RETURN_IF_ERROR(MakeRootDirs(dir, modes.dir));
      if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus(errno, "local store directory", dir);
    } else {
      return ErrnoStatus(err, "local store directory", dir);
    }
  }
  if (!S_ISDIR(st.st_mode)) return FailedPrecondition(fmt::format("local store {}: not a directory", dir));
  if (::access(dir.c_str(), R_OK | W_OK | X_OK) != 0) {
    return ErrnoStatus(errno, "local store directory (needs read, write and search permission)", dir);
  }
  return std::make_unique<LocalObjectStore>(dir, kDefaultPageSize, fs, modes);
}

LocalObjectStore::LocalObjectStore(std::string root, size_t page_size, FileSystem* fs, FileModes modes)
    : root_(std::move(root)),
      page_size_(page_size == 0 ? kDefaultPageSize : page_size),
      fs_(fs != nullptr ? *fs : PosixFileSystem::Default()),
      modes_(modes) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

Status LocalObjectStore::Put(const std::string& key, std::string_view data, const PutOptions& options) {
  DLQ_RETURN_IF_ERROR(ValidateKey("put", key));
  const std::string path = PathOf(key);
  const size_t slash = key.rfind('/');
  const std::string dir = slash == std::string::npos ? root_ : root_ + "/" + key.substr(0, slash);
  if (slash != std::string::npos) {
    DLQ_RETURN_IF_ERROR(
        MakeDirs(fs_, root_, std::string_view(key).substr(0, slash), modes_.dir).WithContext("put " + path));
  }
  // Create-only: an existing object with other content is never replaced;
  // one with the same content is a retried put whose first attempt landed.
  // A link in the object's place is neither.
  auto exists = [&]() -> Status {
    auto info = fs_.LinkStat(path);
    if (info.ok() && info->is_symlink) return LinkRefused(path).WithContext("put " + path);
    if (info.ok() && info->is_regular && info->size == data.size()) {
      auto held = fs_.Read(path, 0, data.size());
      if (held.ok() && *held == data) return Status::Ok();
    }
    return AlreadyExists(fmt::format("put {}: object already exists", path));
  };
  if (options.create_only && fs_.LinkStat(path).ok()) return exists();

  const std::string tmp = fmt::format("{}/{}{}", dir, kLocalStoreTempPrefix, RandomHex(8));
  auto file = fs_.CreateFile(tmp, modes_.file);
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
  auto info = LinkFreeStat(op, key);
  if (!info.ok()) return info.status();
  if (!info->is_regular) return NotFound(fmt::format("{} {}: not an object", op, path));
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
  auto st = LinkFreeStat("head", key);
  if (!st.ok()) return st.status();
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
  std::vector<SkippedEntry> skipped;
  if (!start_rel.empty()) {
    // The walk starts below the root: no component on the way may be a link.
    std::string link;
    auto start = LinkFreeStat("list", start_rel.substr(0, start_rel.size() - 1), &link);
    if (!link.empty()) {
      ListPage page;
      if (token.empty()) page.skipped.push_back({link, std::string(kSkippedLink)});
      return page;
    }
    ErrorCode code = start.ok() ? ErrorCode::kOk : start.status().code();
    if (code == ErrorCode::kNotFound || code == ErrorCode::kFailedPrecondition || (start.ok() && !start->is_dir)) {
      return ListPage{};  // nothing under that prefix, as on S3
    }
    if (!start.ok()) return start.status();
  }
  DLQ_RETURN_IF_ERROR(Walk(fs_, start_rel.empty() ? root_ : root_ + "/" + start_rel.substr(0, start_rel.size() - 1),
                           start_rel, files, skipped));

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
  if (token.empty()) {
    // What the prefix would have covered: entries under it, and a link that
    // stands for a directory the prefix goes into. With a delimiter, what
    // lies below a common prefix is reported when that prefix is listed.
    for (SkippedEntry& e : skipped) {
      bool covered = StartsWith(e.path, prefix) || StartsWith(prefix, e.path + "/");
      if (covered && !delimiter.empty() && e.path.size() > prefix.size() &&
          e.path.find(delimiter, prefix.size()) != std::string::npos) {
        covered = false;
      }
      if (covered) page.skipped.push_back(std::move(e));
    }
  }
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
  auto info = LinkFreeStat("delete", key);
  if (!info.ok() && info.status().code() == ErrorCode::kNotFound) return Status::Ok();  // as on S3
  if (!info.ok()) return info.status();
  if (info->is_dir) return Status::Ok();  // not an object
  if (Status st = fs_.Remove(path); !st.ok()) {
    // Missing, or a parent is a file (ENOTDIR): nothing to delete, as on S3.
    if (st.code() == ErrorCode::kNotFound || st.code() == ErrorCode::kFailedPrecondition) return Status::Ok();
    return st.WithContext("delete");
  }
  const size_t slash = key.rfind('/');
  return fs_.SyncDir(slash == std::string::npos ? root_ : root_ + "/" + key.substr(0, slash))
      .WithContext("delete " + path);
}

Result<FileInfo> LocalObjectStore::LinkFreeStat(std::string_view op, const std::string& key, std::string* link) {
  std::string path = root_;
  std::vector<std::string_view> segments = Split(key, '/');
  for (size_t i = 0; i < segments.size(); ++i) {
    path += '/';
    path += segments[i];
    auto info = fs_.LinkStat(path);
    if (!info.ok()) return info.status().WithContext(op);
    if (info->is_symlink) {
      if (link != nullptr) *link = path.substr(root_.size() + 1);
      return LinkRefused(path).WithContext(fmt::format("{} {}", op, PathOf(key)));
    }
    if (i + 1 == segments.size()) return info;
    if (!info->is_dir) return NotFound(fmt::format("{} {}: {} is not a directory", op, PathOf(key), path));
  }
  return NotFound(fmt::format("{}: empty key", op));
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
  auto file = fs_.CreateFile(probe, modes_.file);
  if (!file.ok()) return file.status().WithContext(fmt::format("cannot create files in archive directory {}", root_));
  (void)(*file)->Close();
  file->reset();
  (void)fs_.Remove(probe);
  return DestinationCheck{};
}

}  // namespace dlq
