// FaultInjectionFileSystem: a FileSystem over another (usually the real one)
// that fails on command, for tests of the file:// store (the model is
// leveldb's FaultInjectionTestEnv). It can fail any operation with a given
// errno, cap each write (short writes), and run out of space after a number
// of bytes (ENOSPC, after writing what fits). It counts calls. Thread-safe.
#pragma once

#include <cerrno>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "common/mutex.h"
#include "s3/file_system.h"

namespace dlq {

class FaultInjectionFileSystem final : public FileSystemWrapper {
 public:
  enum class Op {
    kCreateFile,
    kWrite,
    kSync,
    kClose,
    kRead,
    kStat,
    kLinkStat,
    kListDir,
    kCreateDir,
    kSyncDir,
    kRename,
    kRemove,
    kFreeSpace
  };

  explicit FaultInjectionFileSystem(FileSystem& target) : FileSystemWrapper(target) {}

  // After `after` more successful calls of `op`, the next `times` calls
  // (-1: every one) fail with errno `err` (as ErrnoStatus reports it).
  void Fail(Op op, int err, int after = 0, int times = -1) {
    MutexLock lock(mu_);
    faults_[op] = Fault{err, after, times};
  }
  void Clear() {
    MutexLock lock(mu_);
    faults_.clear();
    max_write_ = 0;
    free_bytes_.reset();
  }
  // Each write accepts at most `bytes` (0: no cap): short writes.
  void SetMaxWrite(size_t bytes) {
    MutexLock lock(mu_);
    max_write_ = bytes;
  }
  // The disk holds `bytes` more bytes; then writes fail with ENOSPC.
  // FreeSpace reports what is left.
  void SetFreeSpace(uint64_t bytes) {
    MutexLock lock(mu_);
    free_bytes_ = bytes;
  }
  int calls(Op op) const {
    MutexLock lock(mu_);
    auto it = calls_.find(op);
    return it == calls_.end() ? 0 : it->second;
  }

  Result<std::unique_ptr<WritableFile>> CreateFile(const std::string& path, mode_t mode) override {
    if (auto err = Check(Op::kCreateFile)) return ErrnoStatus(*err, "create", path);
    auto file = target().CreateFile(path, mode);
    if (!file.ok()) return file.status();
    return std::unique_ptr<WritableFile>(std::make_unique<File>(*this, std::move(*file), path));
  }
  Result<std::string> Read(const std::string& path, uint64_t offset, size_t length) override {
    if (auto err = Check(Op::kRead)) return ErrnoStatus(*err, "read", path);
    return target().Read(path, offset, length);
  }
  Result<FileInfo> Stat(const std::string& path) override {
    if (auto err = Check(Op::kStat)) return ErrnoStatus(*err, "stat", path);
    return target().Stat(path);
  }
  Result<FileInfo> LinkStat(const std::string& path) override {
    if (auto err = Check(Op::kLinkStat)) return ErrnoStatus(*err, "stat", path);
    return target().LinkStat(path);
  }
  Result<std::vector<DirEntry>> ListDir(const std::string& dir) override {
    if (auto err = Check(Op::kListDir)) return ErrnoStatus(*err, "list directory", dir);
    return target().ListDir(dir);
  }
  Status CreateDir(const std::string& path, mode_t mode) override {
    if (auto err = Check(Op::kCreateDir)) return ErrnoStatus(*err, "create directory", path);
    return target().CreateDir(path, mode);
  }
  Status SyncDir(const std::string& dir) override {
    if (auto err = Check(Op::kSyncDir)) return ErrnoStatus(*err, "fsync directory", dir);
    return target().SyncDir(dir);
  }
  Status Rename(const std::string& from, const std::string& to, bool no_replace) override {
    if (auto err = Check(Op::kRename)) return ErrnoStatus(*err, "rename into", to);
    return target().Rename(from, to, no_replace);
  }
  Status Remove(const std::string& path) override {
    if (auto err = Check(Op::kRemove)) return ErrnoStatus(*err, "remove", path);
    return target().Remove(path);
  }
  Result<uint64_t> FreeSpace(const std::string& path) override {
    if (auto err = Check(Op::kFreeSpace)) return ErrnoStatus(*err, "statvfs", path);
    {
      MutexLock lock(mu_);
      if (free_bytes_) return *free_bytes_;
    }
    return target().FreeSpace(path);
  }

 private:
  struct Fault {
    int err = 0;
    int after = 0;
    int times = -1;
  };

  class File final : public WritableFile {
   public:
    File(FaultInjectionFileSystem& fs, std::unique_ptr<WritableFile> inner, std::string path)
        : fs_(fs), inner_(std::move(inner)), path_(std::move(path)) {}
    Result<size_t> Write(std::string_view data) override {
      if (auto err = fs_.Check(Op::kWrite)) return ErrnoStatus(*err, "write", path_);
      size_t n = fs_.Admit(data.size());
      if (n == 0 && !data.empty()) return ErrnoStatus(ENOSPC, "write", path_);
      return inner_->Write(data.substr(0, n));
    }
    Status Sync() override {
      if (auto err = fs_.Check(Op::kSync)) return ErrnoStatus(*err, "fsync", path_);
      return inner_->Sync();
    }
    Status Close() override {
      if (auto err = fs_.Check(Op::kClose)) {
        (void)inner_->Close();  // the descriptor is released either way, as close(2) does
        return ErrnoStatus(*err, "close", path_);
      }
      return inner_->Close();
    }

   private:
    FaultInjectionFileSystem& fs_;
    std::unique_ptr<WritableFile> inner_;
    std::string path_;
  };

  // Counts the call; the errno to fail it with, if any.
  std::optional<int> Check(Op op) {
    MutexLock lock(mu_);
    ++calls_[op];
    auto it = faults_.find(op);
    if (it == faults_.end()) return std::nullopt;
    Fault& f = it->second;
    if (f.after > 0) {
      --f.after;
      return std::nullopt;
    }
    if (f.times == 0) return std::nullopt;
    if (f.times > 0) --f.times;
    return f.err;
  }
  // How many of `wanted` bytes a write may take (0: the disk is full).
  size_t Admit(size_t wanted) {
    MutexLock lock(mu_);
    size_t n = max_write_ > 0 ? std::min(wanted, max_write_) : wanted;
    if (free_bytes_) {
      n = static_cast<size_t>(std::min<uint64_t>(n, *free_bytes_));
      *free_bytes_ -= n;
    }
    return n;
  }

  mutable Mutex mu_;
  std::map<Op, Fault> faults_ DLQ_GUARDED_BY(mu_);
  std::map<Op, int> calls_ DLQ_GUARDED_BY(mu_);
  size_t max_write_ DLQ_GUARDED_BY(mu_) = 0;
  std::optional<uint64_t> free_bytes_ DLQ_GUARDED_BY(mu_);
};

}  // namespace dlq
