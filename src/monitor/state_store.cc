#include "monitor/state_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>

#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr int kSchemaVersion = 1;

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS queues(
  id INTEGER PRIMARY KEY,
  grp TEXT NOT NULL, url TEXT NOT NULL, name TEXT NOT NULL,
  last_empty INTEGER, nonempty_since INTEGER, learned_at INTEGER, pass_baseline INTEGER NOT NULL, oldest_sent INTEGER,
  runs INTEGER NOT NULL, archived INTEGER NOT NULL, failed_runs INTEGER NOT NULL, consecutive_failures INTEGER NOT NULL,
  error_time INTEGER, error_code TEXT, error_class TEXT, error_message TEXT,
  last_run_at INTEGER, last_run_archived INTEGER NOT NULL, last_run_ok INTEGER NOT NULL,
  saved_at INTEGER NOT NULL,
  UNIQUE(grp, url));
CREATE TABLE IF NOT EXISTS alarms(
  qid INTEGER NOT NULL, name TEXT NOT NULL, spec_key TEXT NOT NULL, state INTEGER NOT NULL, periods TEXT NOT NULL,
  PRIMARY KEY(qid, name)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS transitions(
  qid INTEGER NOT NULL, alarm TEXT NOT NULL, t INTEGER NOT NULL,
  from_state INTEGER NOT NULL, to_state INTEGER NOT NULL, reason TEXT NOT NULL, value REAL, initial INTEGER NOT NULL,
  PRIMARY KEY(qid, alarm, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS samples(
  qid INTEGER NOT NULL, t INTEGER NOT NULL,
  visible INTEGER NOT NULL, not_visible INTEGER NOT NULL, delayed INTEGER NOT NULL, expiry_in_s REAL,
  PRIMARY KEY(qid, t)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS ledger_queues(id INTEGER PRIMARY KEY, url TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS ledger(
  qid INTEGER NOT NULL, message_id TEXT NOT NULL,
  sent_time INTEGER NOT NULL, first_seen INTEGER NOT NULL, first_receive_count INTEGER NOT NULL,
  own_receives INTEGER NOT NULL,
  PRIMARY KEY(qid, message_id)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS ledger_sent ON ledger(qid, sent_time);
)sql";

int64_t Ms(SystemTime t) {
  return ToUnixMillis(t);
}

// Owns a prepared statement; binds by 1-based index.
class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql) : db_(db) { rc_ = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  bool prepared() const { return rc_ == SQLITE_OK; }
  Stmt& Bind(int i, int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, double v) {
    sqlite3_bind_double(stmt_, i, v);
    return *this;
  }
  Stmt& Bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& Bind(int i, const std::optional<SystemTime>& v) {
    if (v) return Bind(i, Ms(*v));
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  Stmt& Bind(int i, const std::optional<double>& v) {
    if (v) return Bind(i, *v);
    sqlite3_bind_null(stmt_, i);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return prepared() ? sqlite3_step(stmt_) : rc_; }
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Real(int col) const { return sqlite3_column_double(stmt_, col); }
  bool Null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
  }
  std::optional<SystemTime> Time(int col) const {
    if (Null(col)) return std::nullopt;
    return FromUnixMillis(Int(col));
  }
  std::optional<double> OptReal(int col) const {
    if (Null(col)) return std::nullopt;
    return Real(col);
  }
  sqlite3* db() const { return db_; }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
  int rc_;
};

Status SqliteError(sqlite3* db, int rc, std::string_view what) {
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  std::string m = fmt::format("state store: {}: {} (SQLite code {})", what, detail, rc);
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB: return DataLoss(std::move(m));
    case SQLITE_BUSY:
    case SQLITE_LOCKED: return Unavailable(std::move(m));
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY: return PermissionDenied(std::move(m));
    default: return Internal(std::move(m));
  }
}

Status Exec(sqlite3* db, const char* sql) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) return SqliteError(db, rc, sql);
  return Status::Ok();
}

// Done or an error.
Status Run(Stmt& s, std::string_view what) {
  int rc = s.Step();
  s.Reset();
  if (rc != SQLITE_DONE && rc != SQLITE_ROW) return SqliteError(s.db(), rc, what);
  return Status::Ok();
}

std::string EncodePeriods(const std::vector<AlarmPeriod>& periods) {
  std::string out;
  for (const AlarmPeriod& p : periods) {
    if (!out.empty()) out += ';';
    out += fmt::format("{} {:.17g} {:.17g} {:.17g} {:.17g}", p.index, p.sum, p.min, p.max, p.count);
  }
  return out;
}

std::vector<AlarmPeriod> DecodePeriods(const std::string& text) {
  std::vector<AlarmPeriod> out;
  for (std::string_view part : Split(text, ';')) {
    AlarmPeriod p;
    std::string s(part);
    long long index = 0;
    if (std::sscanf(s.c_str(), "%lld %lf %lf %lf %lf", &index, &p.sum, &p.min, &p.max, &p.count) == 5) {
      p.index = index;
      out.push_back(p);
    }
  }
  return out;
}

AlarmState StateFromInt(int64_t v) {
  switch (v) {
    case 1: return AlarmState::kOk;
    case 2: return AlarmState::kAlarm;
    default: return AlarmState::kInsufficientData;
  }
}

int64_t StateToInt(AlarmState s) {
  return s == AlarmState::kOk ? 1 : s == AlarmState::kAlarm ? 2 : 0;
}

class SqliteStateStore final : public StateStore {
 public:
  SqliteStateStore(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  ~SqliteStateStore() override { sqlite3_close(db_); }

  std::string path() const override { return path_; }

  Result<std::optional<QueueRecord>> LoadQueue(const QueueKey& key) override {
    Stmt q(db_,
           "SELECT id, name, last_empty, nonempty_since, learned_at, pass_baseline, oldest_sent, runs, archived, "
           "failed_runs, consecutive_failures, error_time, error_code, error_class, error_message, last_run_at, "
           "last_run_archived, last_run_ok, saved_at FROM queues WHERE grp = ?1 AND url = ?2");
    q.Bind(1, key.group).Bind(2, key.url);
    int rc = q.Step();
    if (rc == SQLITE_DONE) return std::optional<QueueRecord>();
    if (rc != SQLITE_ROW) return SqliteError(db_, rc, "load queue");
    QueueRecord r;
    r.key = key;
    const int64_t id = q.Int(0);
    r.name = q.Text(1);
    r.last_empty = q.Time(2);
    r.nonempty_since = q.Time(3);
    r.learned_at = q.Time(4);
    r.pass_baseline = q.Int(5);
    r.oldest_sent = q.Time(6);
    r.runs = static_cast<uint64_t>(q.Int(7));
    r.archived = static_cast<uint64_t>(q.Int(8));
    r.failed_runs = static_cast<uint64_t>(q.Int(9));
    r.consecutive_failures = static_cast<uint64_t>(q.Int(10));
    if (auto t = q.Time(11)) r.last_error = StoredError{*t, q.Text(12), q.Text(13), q.Text(14)};
    r.last_run_at = q.Time(15);
    r.last_run_archived = static_cast<uint64_t>(q.Int(16));
    r.last_run_ok = q.Int(17) != 0;
    r.saved_at = FromUnixMillis(q.Int(18));

    Stmt a(db_, "SELECT name, spec_key, state, periods FROM alarms WHERE qid = ?1 ORDER BY name");
    a.Bind(1, id);
    while ((rc = a.Step()) == SQLITE_ROW) {
      StoredAlarm& al = r.alarms.emplace_back();
      al.name = a.Text(0);
      al.spec_key = a.Text(1);
      al.snapshot.state = StateFromInt(a.Int(2));
      al.snapshot.periods = DecodePeriods(a.Text(3));
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, rc, "load alarms");
    Stmt t(db_,
           "SELECT t, from_state, to_state, reason, value, initial FROM transitions WHERE qid = ?1 AND alarm = ?2 "
           "ORDER BY t");
    for (StoredAlarm& al : r.alarms) {
      t.Bind(1, id).Bind(2, al.name);
      while ((rc = t.Step()) == SQLITE_ROW) {
        al.snapshot.history.push_back(Transition{.from = StateFromInt(t.Int(1)),
                                                 .to = StateFromInt(t.Int(2)),
                                                 .time = FromUnixMillis(t.Int(0)),
                                                 .reason = t.Text(3),
                                                 .value = t.OptReal(4),
                                                 .initial = t.Int(5) != 0});
      }
      t.Reset();
      if (rc != SQLITE_DONE) return SqliteError(db_, rc, "load transitions");
    }
    Stmt s(db_, "SELECT t, visible, not_visible, delayed, expiry_in_s FROM samples WHERE qid = ?1 ORDER BY t");
    s.Bind(1, id);
    while ((rc = s.Step()) == SQLITE_ROW) {
      r.samples.push_back({.time = FromUnixMillis(s.Int(0)),
                           .visible = s.Int(1),
                           .not_visible = s.Int(2),
                           .delayed = s.Int(3),
                           .expiry_in_s = s.OptReal(4)});
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, rc, "load samples");
    return std::optional<QueueRecord>(std::move(r));
  }

  // Runs `body` in one write transaction: committed when it succeeds, rolled
  // back when it fails (its error is returned, not the rollback's).
  Status InTransaction(const std::function<Status()>& body) {
    DLQ_RETURN_IF_ERROR(Exec(db_, "BEGIN IMMEDIATE"));
    Status st = body();
    Status end = Exec(db_, st.ok() ? "COMMIT" : "ROLLBACK");
    return st.ok() ? end : st;
  }

  Status SaveQueues(std::span<const QueueRecord> records) override {
    return InTransaction([&] { return SaveAll(records); });
  }

  Result<PruneCounts> Prune(const PruneOptions& o) override {
    PruneCounts counts;
    DLQ_RETURN_IF_ERROR(InTransaction([&]() -> Status {
      auto pruned = PruneAll(o);
      if (!pruned.ok()) return pruned.status();
      counts = *pruned;
      return Status::Ok();
    }));
    return counts;
  }

  Status UpsertLedger(std::span<const LedgerRow> rows) override {
    return InTransaction([&] { return UpsertLedgerRows(rows); });
  }

  Status UpsertLedgerRows(std::span<const LedgerRow> rows) {
    Stmt u(db_,
           "INSERT OR REPLACE INTO ledger(qid, message_id, sent_time, first_seen, first_receive_count, "
           "own_receives) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    Status st;
    std::map<std::string, int64_t> ids;  // queue URL -> ledger_queues.id
    for (const LedgerRow& r : rows) {
      auto id = ids.find(r.queue);
      if (id == ids.end()) {
        auto found = LedgerQueueId(r.queue);
        if (!found.ok()) {
          st = found.status();
          break;
        }
        id = ids.emplace(r.queue, *found).first;
      }
      u.Bind(1, id->second)
          .Bind(2, r.message_id)
          .Bind(3, Ms(r.sent_time))
          .Bind(4, Ms(r.first_seen))
          .Bind(5, r.first_receive_count)
          .Bind(6, r.own_receives);
      st = Run(u, "upsert ledger");
      if (!st.ok()) break;
    }
    return st;
  }

  Result<std::vector<LedgerRow>> LoadLedger(const std::string& queue) override {
    Stmt s(db_,
           "SELECT message_id, sent_time, first_seen, first_receive_count, own_receives FROM ledger WHERE qid = "
           "(SELECT id FROM "
           "ledger_queues WHERE url = ?1) ORDER BY message_id");
    s.Bind(1, queue);
    std::vector<LedgerRow> out;
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      out.push_back({.queue = queue,
                     .message_id = s.Text(0),
                     .sent_time = FromUnixMillis(s.Int(1)),
                     .first_seen = FromUnixMillis(s.Int(2)),
                     .first_receive_count = s.Int(3),
                     .own_receives = s.Int(4)});
    }
    if (rc != SQLITE_DONE) return SqliteError(db_, rc, "load ledger");
    return out;
  }

  Status DeleteLedger(const std::string& queue, std::span<const std::string> message_ids) override {
    return InTransaction([&]() -> Status {
      Stmt d(db_, "DELETE FROM ledger WHERE qid = (SELECT id FROM ledger_queues WHERE url = ?1) AND message_id = ?2");
      for (const std::string& id : message_ids) {
        d.Bind(1, queue).Bind(2, id);
        DLQ_RETURN_IF_ERROR(Run(d, "delete ledger row"));
      }
      return Status::Ok();
    });
  }

  Result<uint64_t> PruneLedger(const std::string& queue, SystemTime sent_before) override {
    Stmt d(db_, "DELETE FROM ledger WHERE qid = (SELECT id FROM ledger_queues WHERE url = ?1) AND sent_time < ?2");
    d.Bind(1, queue).Bind(2, Ms(sent_before));
    DLQ_RETURN_IF_ERROR(Run(d, "prune ledger"));
    return static_cast<uint64_t>(sqlite3_changes(db_));
  }

 private:
  // The ledger's id of a queue URL, added when new.
  Result<int64_t> LedgerQueueId(const std::string& url) {
    Stmt find(db_, "SELECT id FROM ledger_queues WHERE url = ?1");
    find.Bind(1, url);
    if (find.Step() == SQLITE_ROW) return find.Int(0);
    Stmt add(db_, "INSERT INTO ledger_queues(url) VALUES(?1)");
    add.Bind(1, url);
    DLQ_RETURN_IF_ERROR(Run(add, "add ledger queue"));
    return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
  }

  Status SaveAll(std::span<const QueueRecord> records) {
    Stmt q(
        db_,
        "INSERT INTO queues(grp, url, name, last_empty, nonempty_since, learned_at, pass_baseline, oldest_sent, runs, "
        "archived, failed_runs, consecutive_failures, error_time, error_code, error_class, error_message, "
        "last_run_at, last_run_archived, last_run_ok, saved_at) "
        "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20) "
        "ON CONFLICT(grp, url) DO UPDATE SET name = excluded.name, last_empty = excluded.last_empty, "
        "nonempty_since = excluded.nonempty_since, learned_at = excluded.learned_at, "
        "pass_baseline = excluded.pass_baseline, oldest_sent = excluded.oldest_sent, runs = excluded.runs, "
        "archived = excluded.archived, failed_runs = excluded.failed_runs, "
        "consecutive_failures = excluded.consecutive_failures, error_time = excluded.error_time, "
        "error_code = excluded.error_code, error_class = excluded.error_class, "
        "error_message = excluded.error_message, last_run_at = excluded.last_run_at, "
        "last_run_archived = excluded.last_run_archived, last_run_ok = excluded.last_run_ok, "
        "saved_at = excluded.saved_at RETURNING id");
    Stmt a(db_, "INSERT OR REPLACE INTO alarms(qid, name, spec_key, state, periods) VALUES(?1, ?2, ?3, ?4, ?5)");
    Stmt t(db_,
           "INSERT OR REPLACE INTO transitions(qid, alarm, t, from_state, to_state, reason, value, initial) "
           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    Stmt s(db_,
           "INSERT OR REPLACE INTO samples(qid, t, visible, not_visible, delayed, expiry_in_s) "
           "VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    for (const QueueRecord& r : records) {
      const auto& e = r.last_error;
      q.Bind(1, r.key.group).Bind(2, r.key.url).Bind(3, r.name);
      q.Bind(4, r.last_empty).Bind(5, r.nonempty_since).Bind(6, r.learned_at).Bind(7, r.pass_baseline);
      q.Bind(8, r.oldest_sent);
      q.Bind(9, static_cast<int64_t>(r.runs)).Bind(10, static_cast<int64_t>(r.archived));
      q.Bind(11, static_cast<int64_t>(r.failed_runs)).Bind(12, static_cast<int64_t>(r.consecutive_failures));
      q.Bind(13, e ? std::optional<SystemTime>(e->time) : std::nullopt);
      q.Bind(14, e ? e->code : "").Bind(15, e ? e->error_class : "").Bind(16, e ? e->message : "");
      q.Bind(17, r.last_run_at).Bind(18, static_cast<int64_t>(r.last_run_archived));
      q.Bind(19, int64_t{r.last_run_ok ? 1 : 0}).Bind(20, Ms(r.saved_at));
      int rc = q.Step();
      if (rc != SQLITE_ROW) {
        q.Reset();
        return SqliteError(db_, rc, "save queue");
      }
      const int64_t id = q.Int(0);
      rc = q.Step();  // finishes the statement
      q.Reset();
      if (rc != SQLITE_DONE) return SqliteError(db_, rc, "save queue");
      for (const StoredAlarm& al : r.alarms) {
        a.Bind(1, id).Bind(2, al.name).Bind(3, al.spec_key).Bind(4, StateToInt(al.snapshot.state));
        a.Bind(5, EncodePeriods(al.snapshot.periods));
        DLQ_RETURN_IF_ERROR(Run(a, "save alarm"));
        for (const Transition& tr : al.snapshot.history) {
          t.Bind(1, id).Bind(2, al.name).Bind(3, Ms(tr.time)).Bind(4, StateToInt(tr.from)).Bind(5, StateToInt(tr.to));
          t.Bind(6, tr.reason).Bind(7, tr.value).Bind(8, int64_t{tr.initial ? 1 : 0});
          DLQ_RETURN_IF_ERROR(Run(t, "save transition"));
        }
      }
      for (const QueueSample& smp : r.samples) {
        s.Bind(1, id).Bind(2, Ms(smp.time)).Bind(3, smp.visible).Bind(4, smp.not_visible).Bind(5, smp.delayed);
        s.Bind(6, smp.expiry_in_s);
        DLQ_RETURN_IF_ERROR(Run(s, "save sample"));
      }
    }
    return Status::Ok();
  }

  Result<uint64_t> Delete(const char* sql, std::initializer_list<int64_t> args, std::string_view what) {
    Stmt d(db_, sql);
    int i = 1;
    for (int64_t v : args) d.Bind(i++, v);
    DLQ_RETURN_IF_ERROR(Run(d, what));
    return static_cast<uint64_t>(sqlite3_changes(db_));
  }

  Result<PruneCounts> PruneAll(const PruneOptions& o) {
    PruneCounts c;
    const int64_t cutoff = Ms(o.now - o.max_age);
    auto n = Delete("DELETE FROM queues WHERE saved_at < ?1", {cutoff}, "prune queues");
    if (!n.ok()) return n.status();
    c.queues = *n;
    DLQ_RETURN_IF_ERROR(Exec(db_, "DELETE FROM alarms WHERE qid NOT IN (SELECT id FROM queues)"));
    n = Delete("DELETE FROM samples WHERE qid NOT IN (SELECT id FROM queues) OR t < ?1", {cutoff}, "prune samples");
    if (!n.ok()) return n.status();
    c.samples = *n;
    n = Delete("DELETE FROM transitions WHERE qid NOT IN (SELECT id FROM queues) OR t < ?1", {cutoff},
               "prune transitions");
    if (!n.ok()) return n.status();
    c.transitions = *n;
    // By count, one queue (and alarm) at a time: the bound is found once per
    // statement through the primary key.
    Stmt ids(db_, "SELECT id FROM queues");
    std::vector<int64_t> qids;
    while (ids.Step() == SQLITE_ROW) qids.push_back(ids.Int(0));
    Stmt samples(db_,
                 "DELETE FROM samples WHERE qid = ?1 AND t <= (SELECT t FROM samples WHERE qid = ?1 ORDER BY t DESC "
                 "LIMIT 1 OFFSET ?2)");
    Stmt transitions(db_,
                     "DELETE FROM transitions WHERE qid = ?1 AND alarm = ?3 AND t <= (SELECT t FROM transitions WHERE "
                     "qid = ?1 AND alarm = ?3 ORDER BY t DESC LIMIT 1 OFFSET ?2)");
    Stmt alarms(db_, "SELECT name FROM alarms WHERE qid = ?1");
    for (int64_t id : qids) {
      samples.Bind(1, id).Bind(2, static_cast<int64_t>(o.max_samples));
      DLQ_RETURN_IF_ERROR(Run(samples, "prune samples"));
      c.samples += static_cast<uint64_t>(sqlite3_changes(db_));
      alarms.Bind(1, id);
      std::vector<std::string> names;
      while (alarms.Step() == SQLITE_ROW) names.push_back(alarms.Text(0));
      alarms.Reset();
      for (const std::string& name : names) {
        transitions.Bind(1, id).Bind(2, static_cast<int64_t>(o.max_transitions)).Bind(3, name);
        DLQ_RETURN_IF_ERROR(Run(transitions, "prune transitions"));
        c.transitions += static_cast<uint64_t>(sqlite3_changes(db_));
      }
    }
    if (o.watched_queues) {
      DLQ_RETURN_IF_ERROR(Exec(db_, "CREATE TEMP TABLE IF NOT EXISTS watched(url TEXT PRIMARY KEY)"));
      DLQ_RETURN_IF_ERROR(Exec(db_, "DELETE FROM watched"));
      Stmt w(db_, "INSERT OR IGNORE INTO watched(url) VALUES(?1)");
      for (const std::string& url : *o.watched_queues) {
        w.Bind(1, url);
        DLQ_RETURN_IF_ERROR(Run(w, "prune ledger"));
      }
      n = Delete(
          "DELETE FROM ledger WHERE qid IN (SELECT id FROM ledger_queues WHERE url NOT IN (SELECT url FROM watched))",
          {}, "prune ledger");
      if (!n.ok()) return n.status();
      c.ledger = *n;
      DLQ_RETURN_IF_ERROR(Exec(db_, "DELETE FROM ledger_queues WHERE url NOT IN (SELECT url FROM watched)"));
    }
    return c;
  }

  sqlite3* db_;
  std::string path_;
};

// The state file and its WAL hold the message-id ledger, queue URLs and
// alarm history: owner-only whatever the umask. Files of an earlier version
// (0644) are narrowed too.
Status MakeOwnerOnly(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0) return InvalidArgument(fmt::format("state store: create {}: {}", path, std::strerror(errno)));
  const int rc = ::fchmod(fd, 0600);
  const int err = errno;
  ::close(fd);
  if (rc != 0) return InvalidArgument(fmt::format("state store: chmod 0600 {}: {}", path, std::strerror(err)));
  for (const char* suffix : {"-wal", "-shm"}) {
    const std::string side = path + suffix;
    if (::chmod(side.c_str(), 0600) != 0 && errno != ENOENT) {
      return InvalidArgument(fmt::format("state store: chmod 0600 {}: {}", side, std::strerror(errno)));
    }
  }
  return Status::Ok();
}

// Opens `path` and checks it: settings, integrity, schema. DataLoss when the
// file is not a sound state database of ours.
Result<std::unique_ptr<StateStore>> TryOpen(const std::string& path) {
  DLQ_RETURN_IF_ERROR(MakeOwnerOnly(path));
  sqlite3* db = nullptr;
  int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    Status st = SqliteError(db, rc, "open " + path);
    sqlite3_close(db);
    return st;
  }
  auto store = std::make_unique<SqliteStateStore>(db, path);  // closes db on every return below
  sqlite3_busy_timeout(db, 0);
  // Exclusive: the lock is taken by the first read and kept, so a second
  // process opening the same file fails here instead of sharing it.
  DLQ_RETURN_IF_ERROR(Exec(db, "PRAGMA locking_mode = EXCLUSIVE"));
  {
    Stmt check(db, "PRAGMA quick_check");
    rc = check.Step();
    if (rc != SQLITE_ROW) return SqliteError(db, rc, "check " + path);
    if (std::string verdict = check.Text(0); verdict != "ok") {
      return DataLoss(fmt::format("state store: {} failed its integrity check: {}", path, verdict));
    }
  }
  DLQ_RETURN_IF_ERROR(Exec(db, "PRAGMA journal_mode = WAL"));
  DLQ_RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous = NORMAL"));
  // The WAL is checkpointed at 1,000 pages (SQLite's default) and cut back to
  // this size after: its disk use stays bounded whatever a save wrote.
  DLQ_RETURN_IF_ERROR(Exec(db, "PRAGMA journal_size_limit = 16777216"));
  Stmt version(db, "PRAGMA user_version");
  rc = version.Step();
  if (rc != SQLITE_ROW) return SqliteError(db, rc, "read the schema version of " + path);
  const int64_t v = version.Int(0);
  version.Reset();
  if (v > kSchemaVersion) {
    return DataLoss(
        fmt::format("state store: {} has schema version {}, newer than this program's {}", path, v, kSchemaVersion));
  }
  DLQ_RETURN_IF_ERROR(Exec(db, kSchema));
  DLQ_RETURN_IF_ERROR(Exec(db, fmt::format("PRAGMA user_version = {}", kSchemaVersion).c_str()));
  return std::unique_ptr<StateStore>(std::move(store));
}

}  // namespace

std::string StateFileName(int shard_index, int shard_count) {
  if (shard_count <= 1) return "state.sqlite";
  return fmt::format("state-shard-{}-of-{}.sqlite", shard_index, shard_count);
}

Result<std::unique_ptr<StateStore>> OpenSqliteStateStore(const std::string& path,
                                                         const SqliteStateStoreOptions& options) {
  auto store = TryOpen(path);
  if (store.ok() || store.status().code() != ErrorCode::kDataLoss) return store;
  // Not ours or damaged: keep it for a post-mortem, start afresh.
  namespace fs = std::filesystem;
  const std::string moved = path + ".corrupt-" + FormatAmzDate(options.now);  // ...corrupt-20260101T120000Z
  std::error_code ec;
  fs::rename(path, moved, ec);
  if (ec) {
    return store.status().WithContext(fmt::format("cannot move it aside to {}: {}", moved, ec.message()));
  }
  for (const char* suffix : {"-wal", "-shm"}) {
    std::error_code ignored;
    if (fs::exists(path + suffix, ignored)) fs::rename(path + suffix, moved + suffix, ignored);
  }
  if (options.on_moved_aside) options.on_moved_aside(moved, store.status());
  return TryOpen(path);
}

}  // namespace dlq
