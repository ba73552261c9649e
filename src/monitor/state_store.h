// StateStore: what the daemon remembers across restarts (alarm states and
// their history, the charts' samples, archive-run totals, the empty/non-empty
// bounds of each watched queue, and the message ledger). State is a cache of
// what AWS can tell again, never the only copy of anything: losing it costs a
// fresh start, not data. doc/operations.md ("State") describes the file.
//
// OpenSqliteStateStore keeps it in one SQLite file (WAL, one transaction per
// call, synchronous=NORMAL, an exclusive lock so no second process writes the
// same file). A file that is corrupt, not a database or of a newer schema is
// moved aside to `<path>.corrupt-<UTC time>` and a fresh one is created.
//
// Thread-safety: a StateStore is used by one thread at a time (the daemon's
// control thread). Every method may fail; the daemon logs and goes on.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "monitor/alarm.h"
#include "monitor/queue_history.h"

namespace dlq {

// A watched queue: its group and URL (one queue may be in two groups' state).
struct QueueKey {
  std::string group;
  std::string url;
  auto operator<=>(const QueueKey&) const = default;
};

struct StoredAlarm {
  std::string name;      // AlarmSpec::name
  std::string spec_key;  // the spec it was evaluated under; restore only when unchanged
  AlarmSnapshot snapshot;
};

// The last failed archive run of a queue (or a run that could not start
// because the group's destination check failed).
struct StoredError {
  SystemTime time;
  std::string code;         // AWS error code ("NoSuchBucket") or, without one, the class
  std::string error_class;  // ErrorCodeName: "NotFound", "PermissionDenied", "Unavailable", ...
  std::string message;
};

// A queue's archive runs so far: one description for what the daemon keeps
// (QueueArchiveRuns), shows (QueueStatus) and saves (QueueRecord).
struct ArchiveTotals {
  uint64_t runs = 0, archived = 0;
  uint64_t failed_runs = 0, consecutive_failures = 0;  // runs that failed or could not start
  std::optional<StoredError> last_error;               // kept after a later success
  std::optional<SystemTime> last_run_at;               // when the last run ended
  uint64_t last_run_archived = 0;
  bool last_run_ok = true;
};

// One queue's state. On SaveQueues the `samples` and each alarm's
// `snapshot.history` hold only what is new since the last save (appended);
// LoadQueue returns everything kept, oldest first.
struct QueueRecord : ArchiveTotals {
  QueueKey key;
  std::string name;
  std::optional<SystemTime> last_empty;      // last collection that saw the queue empty
  std::optional<SystemTime> nonempty_since;  // start of the current non-empty streak
  std::optional<SystemTime> learned_at;   // start of the last complete receive pass (its ledger knows what was queued)
  int64_t pass_baseline = -1;             // lowest message count since then (-1 unknown)
  std::optional<SystemTime> oldest_sent;  // the oldest SentTimestamp seen still queued
  std::vector<StoredAlarm> alarms;
  std::vector<QueueSample> samples;
  SystemTime saved_at;  // set by SaveQueues' caller
};

// A message the daemon has looked at once (the arrival ledger). `queue` is
// the queue's URL.
struct LedgerRow {
  std::string queue;
  std::string message_id;
  SystemTime sent_time;
  SystemTime first_seen;
  int64_t first_receive_count = 0;
  int64_t own_receives = 0;
  bool operator==(const LedgerRow&) const = default;
};

struct PruneOptions {
  SystemTime now;
  // Queues not saved for this long are forgotten (with their samples and
  // alarms); samples and alarm transitions older than this are dropped.
  Duration max_age = std::chrono::hours(24 * 14);
  size_t max_samples = QueueHistory::kDefaultCapacity;   // per queue, newest kept
  size_t max_transitions = Alarm::kDefaultHistoryLimit;  // per alarm, newest kept
  // Ledger rows of every other queue are deleted (nullopt: none is).
  std::optional<std::vector<std::string>> watched_queues;
};

struct PruneCounts {
  uint64_t queues = 0, samples = 0, transitions = 0, ledger = 0;
};

class StateStore {
 public:
  virtual ~StateStore() = default;

  // Where it keeps its state ("" in memory).
  virtual std::string path() const = 0;
  // nullopt when nothing is kept for `key`.
  virtual Result<std::optional<QueueRecord>> LoadQueue(const QueueKey& key) = 0;
  // All in one transaction: either every record is saved or none.
  virtual Status SaveQueues(std::span<const QueueRecord> records) = 0;
  virtual Result<PruneCounts> Prune(const PruneOptions& options) = 0;

  // The ledger. Upsert replaces a row of the same (queue, message_id).
  virtual Status UpsertLedger(std::span<const LedgerRow> rows) = 0;
  virtual Result<std::vector<LedgerRow>> LoadLedger(const std::string& queue) = 0;
  virtual Status DeleteLedger(const std::string& queue, std::span<const std::string> message_ids) = 0;
  // Deletes the queue's rows sent before `sent_before` (expired); returns how many.
  virtual Result<uint64_t> PruneLedger(const std::string& queue, SystemTime sent_before) = 0;
};

struct SqliteStateStoreOptions {
  SystemTime now;  // names a moved-aside file
  // Called once when a bad file was moved aside (the daemon logs it).
  std::function<void(const std::string& moved_to, const Status& why)> on_moved_aside;
};

// Opens (creating when missing) the SQLite state file at `path`. A corrupt
// file is moved aside and replaced (options.on_moved_aside is told). Fails
// when the file cannot be created or another process holds it. The file is
// made owner-only (0600) whatever the umask, and so are its WAL and shared
// memory files (SQLite gives them the file's bits).
Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& path,
                                                         const SqliteStateStoreOptions& options = {});

// The state file of `shard` under `dir`: state-shard-I-of-N.sqlite
// (state.sqlite without sharding).
std::string StateFileName(int shard_index, int shard_count);

}  // namespace dlq
