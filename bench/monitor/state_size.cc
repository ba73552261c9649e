// The daemon's state file at scale (doc/operations.md, "State"): 1,000 DLQs
// with full charts (720 samples), two alarms each with a full history (100
// transitions), and 1,000,000 ledger rows. Prints the file's size after each
// step and how long the steady-state save (one sample per queue) and the
// prune take. Usage: dlq_state_size [DIR] [QUEUES] [LEDGER_ROWS]
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/time_util.h"
#include "monitor/state_store.h"

namespace {

namespace fs = std::filesystem;
using dlq::FromUnixMillis;
using dlq::LedgerRow;
using dlq::QueueRecord;
using dlq::SystemTime;
using std::chrono::seconds;

uint64_t FileBytes(const std::string& path) {
  uint64_t total = 0;
  for (const char* suffix : {"", "-wal", "-shm"}) {
    std::error_code ec;
    auto n = fs::file_size(path + suffix, ec);
    if (!ec) total += n;
  }
  return total;
}

double Ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double, std::milli>(d).count();
}

std::string Url(size_t q) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "https://sqs.us-east-1.amazonaws.com/123456789012/prod-service-%04zu-dlq", q);
  return buf;
}

QueueRecord Record(size_t q, SystemTime now, size_t samples, size_t transitions) {
  QueueRecord r;
  r.key = {"prod", Url(q)};
  r.name = "prod-service-" + std::to_string(q) + "-dlq";
  r.last_empty = now - seconds(3600);
  r.nonempty_since = now - seconds(1800);
  r.runs = 1234;
  r.archived = 987654;
  r.saved_at = now;
  for (const char* alarm : {"-expiry", "-depth"}) {
    dlq::StoredAlarm& a = r.alarms.emplace_back();
    a.name = r.name + alarm;
    a.spec_key = a.name + "|ApproximateAgeOfOldestMessage|60|1|1|342000|0";
    a.snapshot.state = dlq::AlarmState::kOk;
    for (int64_t p = 0; p < 5; ++p) a.snapshot.periods.push_back({29404999 + p, 120.0, 10.0, 60.0, 2.0});
    for (size_t i = 0; i < transitions; ++i) {
      a.snapshot.history.push_back(
          {dlq::AlarmState::kOk, dlq::AlarmState::kAlarm, now - seconds(60 * static_cast<int64_t>(transitions - i)),
           "Threshold Crossed: 1 out of the last 1 datapoint [342012.0 (28/11/26 03:20:00)] was greater than or "
           "equal to the threshold (342000.0) (minimum 1 datapoint for OK -> ALARM transition).",
           342012.0, i == 0});
    }
  }
  for (size_t i = 0; i < samples; ++i) {
    r.samples.push_back({.time = now - seconds(60 * static_cast<int64_t>(samples - i)),
                         .visible = 3,
                         .not_visible = 0,
                         .delayed = 0,
                         .expiry_in_s = 86400.0 + static_cast<double>(i)});
  }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  const fs::path dir = argc > 1 ? fs::path(argv[1]) : fs::temp_directory_path() / "dlq_state_size";
  const size_t queues = argc > 2 ? std::stoul(argv[2]) : 1000;
  const size_t ledger_rows = argc > 3 ? std::stoul(argv[3]) : 1000000;
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "state.sqlite").string();
  const SystemTime now = FromUnixMillis(int64_t{1764300000} * 1000);
  auto opened = dlq::OpenSqliteStateStore(path, {.now = now, .on_moved_aside = {}});
  if (!opened.ok()) {
    std::fprintf(stderr, "%s\n", opened.status().ToString().c_str());
    return 1;
  }
  auto& store = **opened;

  std::vector<QueueRecord> full;
  for (size_t q = 0; q < queues; ++q) full.push_back(Record(q, now, 720, 100));
  auto t0 = std::chrono::steady_clock::now();
  if (auto st = store.SaveQueues(full); !st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
  std::printf("queues=%zu full charts (720 samples) + 2 alarms x 100 transitions: bytes=%llu (first save %.0f ms)\n",
              queues, static_cast<unsigned long long>(FileBytes(path)), Ms(std::chrono::steady_clock::now() - t0));

  // Steady state: each cycle appends one sample per queue.
  std::vector<QueueRecord> cycle;
  for (size_t q = 0; q < queues; ++q) cycle.push_back(Record(q, now + seconds(60), 1, 0));
  t0 = std::chrono::steady_clock::now();
  if (auto st = store.SaveQueues(cycle); !st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
  std::printf("steady-state save (1 sample per queue, one transaction): %.1f ms\n",
              Ms(std::chrono::steady_clock::now() - t0));
  t0 = std::chrono::steady_clock::now();
  auto pruned = store.Prune({.now = now + seconds(60), .watched_queues = std::nullopt});
  std::printf("prune: %.1f ms, samples dropped %llu\n", Ms(std::chrono::steady_clock::now() - t0),
              pruned.ok() ? static_cast<unsigned long long>(pruned->samples) : 0ULL);

  t0 = std::chrono::steady_clock::now();
  std::vector<LedgerRow> batch;
  for (size_t i = 0; i < ledger_rows; ++i) {
    char id[48];
    std::snprintf(id, sizeof id, "%08zx-1b2c-4d5e-8f90-%012zx", i * 2654435761u % 0xffffffffu, i);
    batch.push_back({Url(i % queues), id, now - seconds(static_cast<int64_t>(i % 86400)), now, 3, 1});
    if (batch.size() == 10000 || i + 1 == ledger_rows) {
      if (auto st = store.UpsertLedger(batch); !st.ok()) return std::fprintf(stderr, "%s\n", st.ToString().c_str()), 1;
      batch.clear();
    }
  }
  std::printf("ledger rows=%zu (batches of 10,000): %.0f ms; bytes=%llu (with the WAL)\n", ledger_rows,
              Ms(std::chrono::steady_clock::now() - t0), static_cast<unsigned long long>(FileBytes(path)));
  opened->reset();  // closes: the WAL is checkpointed into the file and removed
  std::printf("closed: bytes=%llu\n", static_cast<unsigned long long>(FileBytes(path)));
  return 0;
}
