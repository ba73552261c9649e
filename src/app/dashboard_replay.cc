#include "app/dashboard_replay.h"

#include <cstdio>
#include <utility>

#include "app/replay_command.h"
#include "replay/redrive_guard.h"
#include "replay/replayer.h"

namespace dlq {
namespace {

// The group's store, lent to one replay (RunReplay owns what it opens).
class LentStore final : public ObjectStore {
 public:
  explicit LentStore(ObjectStore& store) : store_(store) {}
  Status Put(const std::string& key, std::string_view data, const PutOptions& options) override {
    return store_.Put(key, data, options);
  }
  Result<std::string> Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range) override {
    return store_.Get(key, range);
  }
  Status GetInto(const std::string& key, std::string& out) override { return store_.GetInto(key, out); }
  Result<ObjectInfo> Head(const std::string& key) override { return store_.Head(key); }
  Result<ListPage> List(const std::string& prefix, const std::string& delimiter, const std::string& token) override {
    return store_.List(prefix, delimiter, token);
  }
  Status Delete(const std::string& key) override { return store_.Delete(key); }
  Result<DestinationCheck> CheckWritable() override { return store_.CheckWritable(); }
  std::string Describe() const override { return store_.Describe(); }

 private:
  ObjectStore& store_;
};

// A FILE* that collects what is written to it.
class Capture {
 public:
  Capture() : file_(open_memstream(&data_, &size_)) {}
  ~Capture() {
    if (file_ != nullptr) std::fclose(file_);
    std::free(data_);
  }
  Capture(const Capture&) = delete;
  Capture& operator=(const Capture&) = delete;
  std::FILE* file() const { return file_ != nullptr ? file_ : stderr; }
  std::string Take() {
    if (file_ == nullptr) return {};
    std::fflush(file_);
    return std::string(data_, size_);
  }

 private:
  char* data_ = nullptr;
  size_t size_ = 0;
  std::FILE* file_;
};

}  // namespace

ReplayProgress ToDashboardProgress(const RedriveStatus& s) {
  ReplayProgress p;
  p.phase = std::string(RedrivePhaseName(s.phase));
  p.reason = s.reason;
  p.step = s.step;
  p.steps = s.steps;
  p.total = s.total;
  p.sent = s.sent;
  p.refailed = s.refailed;
  p.dlq_receives = s.dlq_receives;
  p.backlog = s.backlog;
  p.backlog_age = s.backlog_age;
  p.paused_for = s.paused_for;
  p.refailures.reserve(s.refailures.size());
  for (const RefailedMessage& r : s.refailures) {
    p.refailures.push_back({.message_id = r.message_id,
                            .new_message_id = r.new_message_id,
                            .destination = r.destination,
                            .dlq = r.dlq,
                            .found_at = r.found_at});
  }
  return p;
}

DashboardReplayFn MakeDashboardReplay(Clock& clock) {
  return [&clock](const QueueArchiveAccess& access, const DashboardReplaySelection& what, const std::string& actor,
                  const ReplayJobControl& control) -> DashboardReplayResult {
    ReplayCommandOptions options;
    options.from = access.destination;
    options.filter.queues = {access.queue.name};
    options.filter.ids = what.ids;
    options.filter.fingerprint = what.fingerprint;
    for (const std::string& field : what.fingerprint_options.fields) {
      if (!options.filter.fingerprint_fields.empty()) options.filter.fingerprint_fields += ",";
      options.filter.fingerprint_fields += field;
    }
    options.dry_run = what.dry_run;
    options.to_source = true;
    options.progress = "never";
    Capture out, err;
    ReplayDeps deps;
    deps.sqs = access.clients.sqs;
    ObjectStore* store = access.clients.store;
    deps.open_store = [store](const Destination&) -> Result<std::unique_ptr<ObjectStore>> {
      if (store == nullptr) return FailedPrecondition("the queue's group has no archive store");
      return std::unique_ptr<ObjectStore>(std::make_unique<LentStore>(*store));
    };
    deps.caller_arn = [actor]() -> Result<std::string> { return actor; };
    deps.region = access.queue.region.empty() ? access.clients.default_region : access.queue.region;
    deps.clock = &clock;
    deps.out = out.file();
    deps.err = err.file();
    DashboardReplayResult result;
    // A dry run's messages, counted per destination (not listed in the output).
    deps.on_would_send = [&result](const DryRunEntry& e) { ++result.destinations[e.destination]; };
    if (control.report) {
      deps.on_redrive_status = [report = control.report](const RedriveStatus& s) { report(ToDashboardProgress(s)); };
    }
    const std::atomic<bool> never{false};
    result.exit_code = RunReplay(options, deps, control.stop != nullptr ? *control.stop : never);
    result.output = out.Take();
    result.errors = err.Take();
    return result;
  };
}

}  // namespace dlq
