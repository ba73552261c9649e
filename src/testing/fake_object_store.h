// FakeObjectStore: an in-memory ObjectStore for tests. Counts calls, fails on
// command ("the next 2 Puts return 503"), can delay or intercept Puts through
// a hook, honours create-only, and exposes what it stores. Thread-safe; hooks
// run without the lock held, so they may block or call back into the store.
#pragma once

#include <algorithm>
#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "common/crypto.h"
#include "common/mutex.h"
#include "s3/object_store.h"

namespace dlq {

class FakeObjectStore final : public ObjectStore {
 public:
  struct StoredObject {
    std::string data;
    PutOptions options;
    std::string etag;  // MD5 hex of data
    SystemTime last_modified;
  };
  // Called at the start of every Put (before failures and storage). A non-OK
  // return fails that Put without storing anything.
  using PutHook = std::function<Status(const std::string& key, std::string_view data)>;
  // Called at the start of every Get (before failures), e.g. to advance a
  // fake clock or cancel a request while a reader is mid-archive.
  using GetHook = std::function<void(const std::string& key)>;

  // `clock` (optional, must outlive the store) stamps last_modified and is
  // slept on for the put delay.
  explicit FakeObjectStore(std::string name = "fake://store", Clock* clock = nullptr, size_t page_size = 1000)
      : name_(std::move(name)), clock_(clock), page_size_(page_size == 0 ? 1000 : page_size) {}

  // The next `count` Puts fail with `status` (queued after earlier failures).
  void FailNextPut(Status status, int count = 1) {
    MutexLock lock(mu_);
    for (int i = 0; i < count; ++i) put_failures_.push_back(status);
  }
  void FailNextGet(Status status, int count = 1) {
    MutexLock lock(mu_);
    for (int i = 0; i < count; ++i) get_failures_.push_back(status);
  }
  void FailNextList(Status status, int count = 1) {
    MutexLock lock(mu_);
    for (int i = 0; i < count; ++i) list_failures_.push_back(status);
  }
  void FailNextDelete(Status status, int count = 1) {
    MutexLock lock(mu_);
    for (int i = 0; i < count; ++i) delete_failures_.push_back(status);
  }
  void SetPutHook(PutHook hook) {
    MutexLock lock(mu_);
    on_put_ = std::move(hook);
  }
  void SetGetHook(GetHook hook) {
    MutexLock lock(mu_);
    on_get_ = std::move(hook);
  }
  // Each Put sleeps this long on the clock (requires a clock) before storing.
  void SetPutDelay(Duration delay) {
    MutexLock lock(mu_);
    put_delay_ = delay;
  }

  Status Put(const std::string& key, std::string_view data, const PutOptions& options) override {
    ++put_calls_;
    PutHook hook;
    Duration delay{0};
    {
      MutexLock lock(mu_);
      hook = on_put_;
      delay = put_delay_;
    }
    if (hook) {
      Status st = hook(key, data);
      if (!st.ok()) return st;
    }
    if (delay.count() > 0 && clock_ != nullptr) clock_->SleepFor(delay);
    MutexLock lock(mu_);
    if (!put_failures_.empty()) {
      Status st = put_failures_.front();
      put_failures_.pop_front();
      return st;
    }
    if (key.empty()) return InvalidArgument("put: empty key");
    if (options.create_only && objects_.count(key) != 0) {
      // As S3: a retried create-only put whose first attempt landed succeeds.
      if (objects_[key].data == data) return Status::Ok();
      return AlreadyExists("put " + name_ + "/" + key + ": object already exists");
    }
    StoredObject& obj = objects_[key];
    obj.data = std::string(data);
    obj.options = options;
    obj.etag = Md5Hex(data);
    obj.last_modified = clock_ ? clock_->Now() : SystemTime{};
    ++successful_puts_;
    return Status::Ok();
  }

  Result<std::string> Get(const std::string& key,
                          std::optional<std::pair<uint64_t, uint64_t>> range = std::nullopt) override {
    ++get_calls_;
    GetHook hook;
    {
      MutexLock lock(mu_);
      hook = on_get_;
    }
    if (hook) hook(key);
    MutexLock lock(mu_);
    if (!get_failures_.empty()) {
      Status st = get_failures_.front();
      get_failures_.pop_front();
      return st;
    }
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound("get " + name_ + "/" + key + ": no such key");
    const std::string& data = it->second.data;
    if (!range) return data;
    if (range->first > range->second || range->first >= data.size()) {
      return InvalidArgument("get " + name_ + "/" + key + ": range not satisfiable");
    }
    return data.substr(range->first, range->second - range->first + 1);
  }

  Result<ObjectInfo> Head(const std::string& key) override {
    ++head_calls_;
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return NotFound("head " + name_ + "/" + key + ": no such key");
    return Info(it->first, it->second);
  }

  Result<ListPage> List(const std::string& prefix, const std::string& delimiter, const std::string& token) override {
    ++list_calls_;
    MutexLock lock(mu_);
    if (!list_failures_.empty()) {
      Status st = list_failures_.front();
      list_failures_.pop_front();
      return st;
    }
    // (name, is_prefix) in key order, as S3 returns them.
    std::map<std::string, std::optional<ObjectInfo>> entries;
    for (auto it = objects_.lower_bound(prefix);
         it != objects_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
      if (!delimiter.empty()) {
        size_t pos = it->first.find(delimiter, prefix.size());
        if (pos != std::string::npos) {
          entries.emplace(it->first.substr(0, pos + delimiter.size()), std::nullopt);
          continue;
        }
      }
      entries.emplace(it->first, Info(it->first, it->second));
    }
    ListPage page;
    auto it = token.empty() ? entries.begin() : entries.upper_bound(token);
    for (size_t n = 0; it != entries.end() && n < page_size_; ++it, ++n) {
      if (it->second) {
        page.objects.push_back(*it->second);
      } else {
        page.common_prefixes.push_back(it->first);
      }
    }
    if (it != entries.end()) page.next_token = std::prev(it)->first;
    return page;
  }

  Status Delete(const std::string& key) override {
    ++delete_calls_;
    MutexLock lock(mu_);
    if (!delete_failures_.empty()) {
      Status st = delete_failures_.front();
      delete_failures_.pop_front();
      return st;
    }
    objects_.erase(key);
    return Status::Ok();
  }

  // OK unless FailNextCheck queued a status.
  Result<DestinationCheck> CheckWritable() override {
    ++check_calls_;
    MutexLock lock(mu_);
    if (!check_failures_.empty()) {
      Status st = check_failures_.front();
      check_failures_.pop_front();
      return st;
    }
    return DestinationCheck{};
  }
  void FailNextCheck(Status status, int count = 1) {
    MutexLock lock(mu_);
    for (int i = 0; i < count; ++i) check_failures_.push_back(status);
  }
  int check_calls() const { return check_calls_.load(); }

  std::string Describe() const override { return name_; }

  // Inspection.
  int put_calls() const { return put_calls_.load(); }
  int successful_puts() const { return successful_puts_.load(); }
  int get_calls() const { return get_calls_.load(); }
  int head_calls() const { return head_calls_.load(); }
  int list_calls() const { return list_calls_.load(); }
  int delete_calls() const { return delete_calls_.load(); }
  bool Contains(const std::string& key) const {
    MutexLock lock(mu_);
    return objects_.count(key) != 0;
  }
  std::optional<StoredObject> Object(const std::string& key) const {
    MutexLock lock(mu_);
    auto it = objects_.find(key);
    if (it == objects_.end()) return std::nullopt;
    return it->second;
  }
  std::map<std::string, StoredObject> Objects() const {
    MutexLock lock(mu_);
    return objects_;
  }
  std::vector<std::string> Keys() const {
    MutexLock lock(mu_);
    std::vector<std::string> keys;
    for (const auto& [k, v] : objects_) keys.push_back(k);
    return keys;
  }
  size_t size() const {
    MutexLock lock(mu_);
    return objects_.size();
  }
  // Stores an object directly (no counters, no failures, no hook).
  void Insert(const std::string& key, std::string data, PutOptions options = {}) {
    MutexLock lock(mu_);
    StoredObject& obj = objects_[key];
    obj.etag = Md5Hex(data);
    obj.data = std::move(data);
    obj.options = std::move(options);
    obj.last_modified = clock_ ? clock_->Now() : SystemTime{};
  }

 private:
  static ObjectInfo Info(const std::string& key, const StoredObject& obj) {
    return ObjectInfo{key, obj.data.size(), obj.etag, obj.last_modified};
  }

  const std::string name_;
  Clock* const clock_;
  const size_t page_size_;
  mutable Mutex mu_;
  std::map<std::string, StoredObject> objects_ DLQ_GUARDED_BY(mu_);
  std::deque<Status> check_failures_ DLQ_GUARDED_BY(mu_);
  std::atomic<int> check_calls_{0};
  std::deque<Status> put_failures_ DLQ_GUARDED_BY(mu_);
  std::deque<Status> get_failures_ DLQ_GUARDED_BY(mu_);
  std::deque<Status> list_failures_ DLQ_GUARDED_BY(mu_);
  std::deque<Status> delete_failures_ DLQ_GUARDED_BY(mu_);
  PutHook on_put_ DLQ_GUARDED_BY(mu_);
  GetHook on_get_ DLQ_GUARDED_BY(mu_);
  Duration put_delay_ DLQ_GUARDED_BY(mu_){0};
  std::atomic<int> put_calls_{0};
  std::atomic<int> successful_puts_{0};
  std::atomic<int> get_calls_{0};
  std::atomic<int> head_calls_{0};
  std::atomic<int> list_calls_{0};
  std::atomic<int> delete_calls_{0};
};

}  // namespace dlq
