// Failure scenarios (issue 7): the real `dlq-archive archive` runs as a child
// process against fauxqs through a FaultProxy, and each scenario checks that
// the process exits in bounded time with the right code, that nothing is lost
// (every message sent is in the archive or back in the queue once its
// visibility ran out) and that nothing corrupted is archived.
//
// The archive is read back with ScanArchive straight from fauxqs, and the
// queue is received from directly, never through the proxy. fauxqs applies
// visibility lazily, so "back in the queue" is checked by receiving after the
// visibility timeout, not by its NotVisible count.
//
// Each run prints "SCENARIO <name> exit=<code> elapsed=<s>s" (and, for
// signals, the time from the signal to the exit).
#include <fcntl.h>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <functional>
#include <future>
#include <set>
#include <thread>

#include "fault_proxy.h"
#include "harness.h"
#include "query/scan.h"
#include "s3/s3_object_store.h"

extern char** environ;

namespace dlq::it {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::steady_clock;

constexpr seconds kVisibility{10};  // --visibility-timeout for every run

double Seconds(steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// A child process with captured stdout and stderr and a hard time limit.
class Child {
 public:
  struct Outcome {
    int exit_code = -1;   // -1 when it ended by a signal
    int term_signal = 0;  // the signal that ended it, 0 when it exited
    bool killed = false;  // still running at the hard limit: SIGKILLed
    std::string out, err;
    double elapsed_s = 0;  // spawn to exit
    steady_clock::time_point exited_at;
  };

  static std::unique_ptr<Child> Spawn(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
    auto child = std::unique_ptr<Child>(new Child);
    int out[2], err[2];
    if (pipe2(out, O_CLOEXEC) != 0) return nullptr;
    if (pipe2(err, O_CLOEXEC) != 0) {
      close(out[0]);
      close(out[1]);
      return nullptr;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    for (int s : {SIGINT, SIGTERM, SIGPIPE, SIGHUP}) sigaddset(&defaults, s);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setpgroup(&attr, 0);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    std::vector<char*> cargv, cenv;
    for (const auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    for (const auto& e : env) cenv.push_back(const_cast<char*>(e.c_str()));
    cenv.push_back(nullptr);
    child->start_ = steady_clock::now();
    int rc = posix_spawn(&child->pid_, cargv[0], &fa, &attr, cargv.data(), cenv.data());
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    close(out[1]);
    close(err[1]);
    if (rc != 0) {
      close(out[0]);
      close(err[0]);
      return nullptr;
    }
    child->out_reader_ = std::thread(Drain, out[0], &child->out_);
    child->err_reader_ = std::thread(Drain, err[0], &child->err_);
    return child;
  }

  ~Child() {
    // pid_ stays -1 when posix_spawn failed: kill(-1) would signal every
    // process on the machine.
    if (!reaped_ && pid_ > 0) {
      ::kill(pid_, SIGKILL);
      Reap(0);
    }
    if (out_reader_.joinable()) out_reader_.join();
    if (err_reader_.joinable()) err_reader_.join();
  }

  void Signal(int sig) {
    if (pid_ > 0 && Running()) ::kill(pid_, sig);
  }

  bool Running() { return pid_ > 0 && !reaped_ && !Reap(WNOHANG); }

  // Waits for the exit; SIGKILLs the child once `hard_limit` since its spawn has passed.
  Outcome Wait(milliseconds hard_limit) {
    Outcome o;
    while (Running()) {
      if (steady_clock::now() - start_ >= hard_limit) {
        ::kill(pid_, SIGKILL);
        Reap(0);
        o.killed = true;
        break;
      }
      std::this_thread::sleep_for(milliseconds(5));
    }
    if (out_reader_.joinable()) out_reader_.join();
    if (err_reader_.joinable()) err_reader_.join();
    o.out = out_;
    o.err = err_;
    o.exit_code = WIFEXITED(status_) ? WEXITSTATUS(status_) : -1;
    o.term_signal = WIFSIGNALED(status_) ? WTERMSIG(status_) : 0;
    o.exited_at = exited_at_;
    o.elapsed_s = Seconds(exited_at_ - start_);
    return o;
  }

  steady_clock::time_point started_at() const { return start_; }

 private:
  Child() = default;

  static void Drain(int fd, std::string* into) {
    char buf[4096];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      into->append(buf, static_cast<size_t>(n));
    }
    close(fd);
  }

  bool Reap(int flags) {
    pid_t r;
    do {
      r = waitpid(pid_, &status_, flags);
    } while (r < 0 && errno == EINTR);
    if (r != pid_) return false;
    reaped_ = true;
    exited_at_ = steady_clock::now();
    return true;
  }

  pid_t pid_ = -1;
  int status_ = 0;
  bool reaped_ = false;
  steady_clock::time_point start_, exited_at_;
  std::thread out_reader_, err_reader_;
  std::string out_, err_;  // written by the reader threads until joined
};

std::string Describe(const Child::Outcome& o) {
  return fmt::format("exit={} signal={} killed={} elapsed={:.1f}s\n--- stdout ---\n{}--- stderr ---\n{}", o.exit_code,
                     o.term_signal, o.killed, o.elapsed_s, o.out, o.err);
}

void Report(const std::string& name, const Child::Outcome& o, const std::string& extra = "") {
  std::printf("SCENARIO %s exit=%d elapsed=%.1fs%s%s\n", name.c_str(), o.killed ? -9 : o.exit_code, o.elapsed_s,
              extra.empty() ? "" : " ", extra.c_str());
  std::fflush(stdout);
}

std::string FaultCounts(const FaultProxyStats& s) {
  std::string out = fmt::format("requests={} forwarded={}", s.requests, s.forwarded);
  for (const auto& [k, v] : s.faults) out += fmt::format(" [{}]={}", k, v);
  return out;
}

// One queue, one bucket, one proxy, one archiver run.
struct Lane {
  std::string name;
  std::string queue, url, bucket;
  bool fifo = false;  // a FIFO queue, every message in group kFifoGroup
  std::unique_ptr<FaultProxy> proxy;
  std::map<std::string, std::string> sent;   // message_id -> body
  std::map<std::string, size_t> sent_index;  // message_id -> position in the send order
  std::unique_ptr<Child> child;
};

constexpr const char* kFifoGroup = "g0";

// What became of the messages a lane sent.
struct Accounting {
  std::map<std::string, int> archived;  // message_id -> copies in the archive
  std::set<std::string> back_in_queue;
  std::vector<std::string> lost;      // neither archived nor back in the queue
  std::vector<std::string> problems;  // wrong bodies, unknown ids, unreadable objects
  // Send positions of the archived records, one list per object in key order
  // (line order within), and of the messages received back, in receive order.
  std::vector<std::vector<size_t>> archived_order;
  std::vector<size_t> back_order;
  uint64_t objects = 0;
  int64_t visible = -1, not_visible = -1;  // queue attributes right after the run
  bool waited_for_visibility = false;

  size_t Duplicates() const {
    size_t d = 0;
    for (const auto& [id, n] : archived) d += n - 1;
    return d;
  }
  size_t ArchivedAndBack() const {
    size_t n = 0;
    for (const auto& id : back_in_queue) n += archived.count(id);
    return n;
  }
  std::string Summary() const {
    return fmt::format("archived={} duplicates={} back_in_queue={} lost={} objects={}", archived.size(), Duplicates(),
                       back_in_queue.size(), lost.size(), objects);
  }
};

class FailureScenario : public ::testing::Test {
 protected:
  void SetUp() override {
    DLQ_REQUIRE_STAND_IN("fauxqs", fauxqs);
    fauxqs_ = fauxqs;
    direct_ = Services(fauxqs_);
    ASSERT_TRUE(direct_);
  }

  void TearDown() override {
    for (auto& lane : lanes_) {
      lane->child.reset();
      if (lane->proxy) lane->proxy->Stop();
      if (!lane->url.empty()) (void)direct_->sqs().DeleteQueue(lane->url);
    }
  }

  // A fresh queue holding `messages` messages, a bucket, and a proxy with
  // `plan`. With `fifo`, a FIFO queue whose messages are all in one group.
  Lane& MakeLane(const std::string& name, int messages, FaultPlan plan, bool fifo = false) {
    auto lane = std::make_unique<Lane>();
    lane->name = name;
    lane->fifo = fifo;
    const std::string base = UniqueName("fs-" + name);
    lane->queue = fifo ? base + ".fifo" : base;
    std::map<std::string, std::string> attrs;
    if (fifo) attrs = {{"FifoQueue", "true"}, {"ContentBasedDeduplication", "false"}};
    auto url = direct_->sqs().CreateQueue(lane->queue, attrs);
    EXPECT_TRUE(url.ok()) << url.status().ToString();
    lane->url = url.ok() ? *url : "";
    lane->bucket = base + "-archive";
    EXPECT_TRUE(direct_->s3_for(lane->bucket).CreateBucket(lane->bucket).ok());
    for (int i = 0; i < messages; i += 10) {
      std::vector<SendEntry> batch;
      std::map<std::string, std::string> bodies;
      std::map<std::string, size_t> positions;
      for (int j = i; j < std::min(messages, i + 10); ++j) {
        SendEntry e;
        e.id = "m" + std::to_string(j);
        e.body = fmt::format("{} message {:04} {}", name, j, RandomHex(8));
        if (fifo) {
          e.message_group_id = kFifoGroup;
          e.message_deduplication_id = e.id + "-" + RandomHex(8);
        }
        bodies[e.id] = e.body;
        positions[e.id] = static_cast<size_t>(j);
        batch.push_back(std::move(e));
      }
      auto r = direct_->sqs().SendMessageBatch(lane->url, batch);
      EXPECT_TRUE(r.ok() && r->failed.empty()) << (r.ok() ? "failed entries" : r.status().ToString());
      if (!r.ok()) break;
      for (const auto& s : r->sent) {
        lane->sent[s.message_id] = bodies[s.id];
        lane->sent_index[s.message_id] = positions[s.id];
      }
    }
    EXPECT_EQ(lane->sent.size(), static_cast<size_t>(messages));
    auto proxy = FaultProxy::Start(fauxqs_.endpoint(), std::move(plan));
    EXPECT_TRUE(proxy.ok()) << proxy.status().ToString();
    if (proxy.ok()) lane->proxy = std::move(*proxy);
    lanes_.push_back(std::move(lane));
    return *lanes_.back();
  }

  // Starts `dlq-archive archive` on the lane, through its proxy.
  bool StartArchiver(Lane& lane, const std::vector<std::string>& extra, const std::string& log_level = "warn") {
    std::vector<std::string> argv = {DLQ_BINARY,
                                     "archive",
                                     "--queue",
                                     lane.queue,
                                     "--to",
                                     "s3://" + lane.bucket + "/p",
                                     "--endpoint-url",
                                     lane.proxy->url(),
                                     "--visibility-timeout",
                                     std::to_string(kVisibility.count()) + "s",
                                     "--progress",
                                     "never",
                                     "--log-level",
                                     log_level};
    argv.insert(argv.end(), extra.begin(), extra.end());
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
      std::string_view kv(*e);
      if (kv.rfind("AWS_", 0) == 0 || kv.rfind("DLQ_", 0) == 0) continue;
      env.emplace_back(kv);
    }
    for (const auto& [k, v] : fauxqs_.env) env.push_back(k + "=" + v);
    env.push_back("AWS_ENDPOINT_URL=" + lane.proxy->url());
    env.push_back("AWS_CONFIG_FILE=/nonexistent/config");
    env.push_back("AWS_SHARED_CREDENTIALS_FILE=/nonexistent/credentials");
    lane.child = Child::Spawn(argv, env);
    return lane.child != nullptr;
  }

  // Everything receivable now, straight from fauxqs (then hidden for two
  // minutes). A FIFO lane's messages are deleted once counted: a group stays
  // blocked while any of its messages is in flight.
  void ReceiveAllDirect(const Lane& lane, Accounting& acc) {
    ReceiveOptions ro;
    ro.visibility_timeout = 120;
    for (int empty = 0; empty < 2;) {
      auto got = direct_->sqs().ReceiveMessages(lane.url, ro);
      if (!got.ok()) {
        acc.problems.push_back("direct receive: " + got.status().ToString());
        return;
      }
      if (got->empty()) {
        ++empty;
        continue;
      }
      empty = 0;
      for (const Message& m : *got) {
        auto it = lane.sent.find(m.message_id);
        if (it == lane.sent.end()) {
          acc.problems.push_back("unknown message in the queue: " + m.message_id);
        } else if (it->second != m.body) {
          acc.problems.push_back("body changed in the queue: " + m.message_id);
        }
        acc.back_in_queue.insert(m.message_id);
        if (auto pos = lane.sent_index.find(m.message_id); pos != lane.sent_index.end()) {
          acc.back_order.push_back(pos->second);
        }
      }
      if (lane.fifo) {
        std::vector<DeleteEntry> entries;
        for (const Message& m : *got) entries.push_back({std::to_string(entries.size()), m.receipt_handle});
        auto deleted = direct_->sqs().DeleteMessageBatch(lane.url, entries);
        if (!deleted.ok() || !deleted->failed.empty()) {
          acc.problems.push_back("direct delete: " +
                                 (deleted.ok() ? std::string("failed entries") : deleted.status().ToString()));
          return;
        }
      }
    }
  }

  void FindLost(const Lane& lane, Accounting& acc) {
    acc.lost.clear();
    for (const auto& [id, body] : lane.sent) {
      if (!acc.archived.count(id) && !acc.back_in_queue.count(id)) acc.lost.push_back(id);
    }
  }

  // Reads the archive and the queue after the run that ended at `exited_at`;
  // waits out the visibility timeout only when something is unaccounted for.
  Accounting Account(const Lane& lane, steady_clock::time_point exited_at) {
    Accounting acc;
    auto attrs = direct_->sqs().GetQueueAttributes(
        lane.url, {"ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"});
    if (attrs.ok()) {
      acc.visible = std::stoll(attrs->at("ApproximateNumberOfMessages"));
      acc.not_visible = std::stoll(attrs->at("ApproximateNumberOfMessagesNotVisible"));
    }
    S3ObjectStore store(direct_->s3_for(lane.bucket), lane.bucket);
    ScanOptions so;
    so.deduplicate = false;
    std::string last_key;
    auto stats = ScanArchive(
        store, ParseDestination("s3://" + lane.bucket + "/p").value(), so,
        [&](const ArchiveRecord& r, const RecordLocation& where) {
          if (acc.archived_order.empty() || where.key != last_key) acc.archived_order.emplace_back();
          last_key = where.key;
          if (auto pos = lane.sent_index.find(r.message_id); pos != lane.sent_index.end()) {
            acc.archived_order.back().push_back(pos->second);
          }
          if (lane.fifo) {
            auto group = r.attributes.find("MessageGroupId");
            if (group == r.attributes.end() || group->second != kFifoGroup) {
              acc.problems.push_back(
                  fmt::format("{} in {} lacks MessageGroupId {}", r.message_id, where.key, kFifoGroup));
            }
          }
          auto it = lane.sent.find(r.message_id);
          if (it == lane.sent.end()) {
            acc.problems.push_back(fmt::format("unknown message {} in {}", r.message_id, where.key));
          } else if (it->second != r.body) {
            acc.problems.push_back(fmt::format("archived body of {} differs from what was sent (in {} line {}): '{}'",
                                               r.message_id, where.key, where.line, r.body));
          }
          ++acc.archived[r.message_id];
          return true;
        });
    if (!stats.ok()) {
      acc.problems.push_back("reading the archive: " + stats.status().ToString());
    } else {
      acc.objects = stats->objects;
      if (!stats->complete()) {
        acc.problems.push_back(
            fmt::format("{} corrupt objects, {} corrupt lines", stats->skipped_objects, stats->skipped_lines));
      }
    }
    ReceiveAllDirect(lane, acc);
    FindLost(lane, acc);
    if (!acc.lost.empty()) {
      // Messages whose receipt handles died with the archiver reappear once
      // the visibility timeout (or the last heartbeat's extension) runs out.
      std::this_thread::sleep_until(exited_at + kVisibility + seconds(2));
      acc.waited_for_visibility = true;
      ReceiveAllDirect(lane, acc);
      FindLost(lane, acc);
    }
    return acc;
  }

  static void ExpectNothingLost(const Accounting& acc) {
    EXPECT_TRUE(acc.lost.empty()) << acc.lost.size() << " messages lost, e.g. " << acc.lost.front() << "; "
                                  << acc.Summary();
    for (const auto& p : acc.problems) ADD_FAILURE() << p;
  }

  // One FIFO group, stopped part way: the archive holds the first k messages
  // sent (SQS hands out a group's next message only once the one before is
  // deleted), each object in send order and the objects one after another;
  // what is back in the queue comes back in send order.
  static void ExpectFifoOrderKept(const Lane& lane, const Accounting& acc) {
    std::vector<std::pair<size_t, size_t>> ranges;  // per object: first, last send position
    for (const auto& object : acc.archived_order) {
      if (object.empty()) continue;
      EXPECT_TRUE(std::is_sorted(object.begin(), object.end()))
          << "an object's lines are out of send order: " << ::testing::PrintToString(object);
      ranges.emplace_back(object.front(), object.back());
    }
    std::sort(ranges.begin(), ranges.end());
    for (size_t i = 1; i < ranges.size(); ++i) {
      EXPECT_LT(ranges[i - 1].second, ranges[i].first)
          << "objects interleave in send order: " << ::testing::PrintToString(ranges);
    }
    const size_t k = acc.archived.size();
    for (const auto& [id, pos] : lane.sent_index) {
      EXPECT_EQ(acc.archived.count(id) > 0, pos < k)
          << "the archive is not the first " << k << " messages sent: message " << pos << " is "
          << (pos < k ? "missing" : "archived ahead of its turn") << "; " << acc.Summary();
    }
    EXPECT_TRUE(std::is_sorted(acc.back_order.begin(), acc.back_order.end()))
        << "messages came back out of send order: " << ::testing::PrintToString(acc.back_order);
  }

  // Exit 0 means everything archived and deleted, and the queue empty.
  static void ExpectAllArchivedQueueEmpty(const Lane& lane, const Accounting& acc) {
    EXPECT_EQ(acc.archived.size(), lane.sent.size()) << acc.Summary();
    EXPECT_TRUE(acc.back_in_queue.empty()) << acc.Summary();
    EXPECT_EQ(acc.visible, 0);
    EXPECT_EQ(acc.not_visible, 0);
  }

  StandIn fauxqs_;
  std::unique_ptr<AwsServices> direct_;
  std::vector<std::unique_ptr<Lane>> lanes_;
};

TEST_F(FailureScenario, PutsDeniedMidDrainExitOneWithinSecondsAndLosesNothing) {
  FaultPlan plan;
  plan.deny_puts_after = 3;
  Lane& lane = MakeLane("denied", 300, plan);
  ASSERT_TRUE(lane.proxy);
  ASSERT_TRUE(StartArchiver(lane, {"--batch-max-messages", "20", "--concurrency", "8"}, "off"));
  Child::Outcome o = lane.child->Wait(seconds(30));
  FaultProxyStats ps = lane.proxy->Stats();
  Accounting acc = Account(lane, o.exited_at);
  Report("puts-denied-403", o, acc.Summary() + " " + FaultCounts(ps));

  ASSERT_FALSE(o.killed) << "hung: " << Describe(o);
  EXPECT_EQ(o.exit_code, 1) << Describe(o);
  EXPECT_LT(o.elapsed_s, 15.0) << Describe(o);
  // Exactly one line on stderr, naming the bucket, the key and the S3 error code.
  std::vector<std::string> lines;
  for (std::string_view rest = o.err; !rest.empty();) {
    size_t nl = rest.find('\n');
    std::string line(rest.substr(0, nl));
    if (!line.empty()) lines.push_back(line);
    if (nl == std::string_view::npos) break;
    rest.remove_prefix(nl + 1);
  }
  ASSERT_EQ(lines.size(), 1u) << Describe(o);
  const std::string& line = lines[0];
  EXPECT_NE(line.find(lane.bucket), std::string::npos) << line;
  EXPECT_NE(line.find("AccessDenied"), std::string::npos) << line;
  bool names_a_denied_key = false;
  for (const auto& path : ps.denied_paths) {
    std::string key = path.substr(lane.bucket.size() + 2);  // "/bucket/key"
    names_a_denied_key |= line.find(key) != std::string::npos;
  }
  EXPECT_TRUE(names_a_denied_key) << line << "\ndenied: " << ::testing::PrintToString(ps.denied_paths);

  EXPECT_EQ(ps.puts_passed, 3u);
  ExpectNothingLost(acc);
  EXPECT_GT(acc.archived.size(), 0u) << "the denial came before anything was stored: " << acc.Summary();
  // Messages of confirmed objects were deleted; none is also back in the queue.
  EXPECT_EQ(acc.ArchivedAndBack(), 0u) << acc.Summary();
}

TEST_F(FailureScenario, TransientFaultsEverywhereStillArchiveEverything) {
  FaultPlan plan;
  plan.sqs_error = FaultRule::WithProbability(0.2);
  plan.s3_slowdown = FaultRule::WithProbability(0.2);
  plan.seed = 11;
  Lane& lane = MakeLane("transient", 200, plan);
  ASSERT_TRUE(lane.proxy);
  // 10 attempts per call: a call fails for good with probability 0.2^10.
  ASSERT_TRUE(StartArchiver(lane, {"--batch-max-messages", "20", "--max-attempts", "10"}));
  Child::Outcome o = lane.child->Wait(seconds(60));
  FaultProxyStats ps = lane.proxy->Stats();
  Accounting acc = Account(lane, o.exited_at);
  Report("transient-5xx", o, acc.Summary() + " " + FaultCounts(ps));

  ASSERT_FALSE(o.killed) << "hung: " << Describe(o);
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
  EXPECT_LT(o.elapsed_s, 45.0) << Describe(o);
  EXPECT_GT(ps.sqs_errors + ps.slowdowns, 0u);
  ExpectNothingLost(acc);
  ExpectAllArchivedQueueEmpty(lane, acc);
}

TEST_F(FailureScenario, LostRepliesCauseDuplicatesAtMostNeverLoss) {
  FaultPlan plan;
  plan.drop_after = FaultRule{0.3, {"ReceiveMessage", "DeleteMessageBatch"}, 10};
  plan.seed = 5;
  Lane& lane = MakeLane("lost-replies", 200, plan);
  ASSERT_TRUE(lane.proxy);
  ASSERT_TRUE(StartArchiver(lane, {"--batch-max-messages", "20"}));
  Child::Outcome o = lane.child->Wait(seconds(60));
  FaultProxyStats ps = lane.proxy->Stats();
  Accounting acc = Account(lane, o.exited_at);
  Report("replies-lost", o, acc.Summary() + " " + FaultCounts(ps));

  ASSERT_FALSE(o.killed) << "hung: " << Describe(o);
  EXPECT_TRUE(o.exit_code == 0 || o.exit_code == 4) << "want 0 (all archived) or 4 (incomplete); " << Describe(o);
  EXPECT_LT(o.elapsed_s, 45.0) << Describe(o);
  EXPECT_GT(ps.dropped_after, 0u);
  ExpectNothingLost(acc);
  if (o.exit_code == 0) ExpectAllArchivedQueueEmpty(lane, acc);
  if (o.exit_code == 4) {
    EXPECT_FALSE(acc.back_in_queue.empty()) << "exit 4 but nothing was left: " << acc.Summary();
  }
}

TEST_F(FailureScenario, BodiesCorruptedInTransitNeverReachTheArchive) {
  FaultPlan plan;
  plan.corrupt_body = FaultRule::Times(2);
  Lane& lane = MakeLane("corrupt", 100, plan);
  ASSERT_TRUE(lane.proxy);
  ASSERT_TRUE(StartArchiver(lane, {"--batch-max-messages", "20"}));
  Child::Outcome o = lane.child->Wait(seconds(60));
  FaultProxyStats ps = lane.proxy->Stats();
  Accounting acc = Account(lane, o.exited_at);
  Report("bodies-corrupted", o, acc.Summary() + " " + FaultCounts(ps));

  ASSERT_FALSE(o.killed) << "hung: " << Describe(o);
  EXPECT_GE(ps.corrupted, 1u);
  ExpectNothingLost(acc);  // also fails on any archived body that differs from what was sent
  // A later receive gets the corrupted messages intact: everything is archived.
  EXPECT_EQ(o.exit_code, 0) << Describe(o);
  EXPECT_LT(o.elapsed_s, 45.0) << Describe(o);
  if (o.exit_code == 0) ExpectAllArchivedQueueEmpty(lane, acc);
}

// Signals. Each run waits until the proxy holds a request of `op` (delayed by
// `latency`), then sends the signal; SIGTERM and SIGINT run side by side.
struct SignalRun {
  Child::Outcome outcome;
  bool reached_state = false;
  bool state_at_signal = false;  // the state still held right before the first signal
  double after_signal_s = -1;    // first signal to exit
  double after_second_s = -1;    // second signal to exit (-1: not sent, it had exited)
};

// Sends `sig` once `state` holds of the proxy's stats (then `second_sig`, if
// not 0, a second later).
SignalRun SignalWhen(Lane& lane, const std::function<bool(const FaultProxyStats&)>& state, int sig, int second_sig,
                     milliseconds hard_limit) {
  SignalRun run;
  run.reached_state = lane.proxy->WaitFor(state, seconds(30));
  std::this_thread::sleep_for(milliseconds(200));
  run.state_at_signal = state(lane.proxy->Stats());
  auto signalled = steady_clock::now();
  lane.child->Signal(sig);
  steady_clock::time_point second;
  if (second_sig != 0) {
    std::this_thread::sleep_for(milliseconds(1000));
    if (lane.child->Running()) {
      second = steady_clock::now();
      lane.child->Signal(second_sig);
    }
  }
  run.outcome = lane.child->Wait(hard_limit);
  run.after_signal_s = Seconds(run.outcome.exited_at - signalled);
  if (second != steady_clock::time_point{}) run.after_second_s = Seconds(run.outcome.exited_at - second);
  return run;
}

SignalRun SignalWhileIn(Lane& lane, const std::string& op, int sig, int second_sig, milliseconds hard_limit) {
  return SignalWhen(
      lane, [&](const FaultProxyStats& s) { return s.InFlight(op) > 0; }, sig, second_sig, hard_limit);
}

class SignalScenario : public FailureScenario {
 protected:
  // Runs SIGTERM and SIGINT lanes in parallel with `op` replies delayed by `latency`.
  void StopWhileIn(const std::string& state, const std::string& op, milliseconds latency, int messages) {
    FaultPlan plan;
    plan.delay = FaultRule::Always({op});
    plan.latency = latency;
    std::vector<std::pair<int, Lane*>> lanes;
    for (int sig : {SIGTERM, SIGINT}) {
      Lane& lane = MakeLane(fmt::format("{}-{}", state, sig == SIGTERM ? "term" : "int"), messages, plan);
      ASSERT_TRUE(lane.proxy);
      ASSERT_TRUE(StartArchiver(lane, {"--batch-max-messages", "20"}));
      lanes.emplace_back(sig, &lane);
    }
    std::vector<std::future<SignalRun>> runs;
    for (auto& [sig, lane] : lanes) {
      runs.push_back(std::async(std::launch::async, SignalWhileIn, std::ref(*lane), op, sig, 0, seconds(30)));
    }
    for (size_t i = 0; i < lanes.size(); ++i) {
      auto [sig, lane] = lanes[i];
      SignalRun run = runs[i].get();
      const Child::Outcome& o = run.outcome;
      Accounting acc = Account(*lane, o.exited_at);
      Report(fmt::format("{}-while-{}", sig == SIGTERM ? "sigterm" : "sigint", state), o,
             fmt::format("after_signal={:.1f}s {}", run.after_signal_s, acc.Summary()));
      SCOPED_TRACE(lane->name);
      EXPECT_TRUE(run.reached_state) << "no " << op << " was ever in flight; " << Describe(o);
      ASSERT_FALSE(o.killed) << "hung after the signal: " << Describe(o);
      EXPECT_EQ(o.exit_code, 130) << Describe(o);
      EXPECT_LT(run.after_signal_s, 10.0) << Describe(o);
      ExpectNothingLost(acc);
    }
  }
};

TEST_F(SignalScenario, SignalWhileReceivingExits130WithinTenSecondsAndLosesNothing) {
  // Receives answered after 15 s, later than the visibility timeout.
  StopWhileIn("receiving", "ReceiveMessage", milliseconds(15000), 100);
}

TEST_F(SignalScenario, SignalWhileUploadingExits130WithinTenSecondsAndLosesNothing) {
  StopWhileIn("uploading", "S3:PUT", milliseconds(4000), 200);
}

TEST_F(SignalScenario, SignalWhileDeletingExits130WithinTenSecondsAndLosesNothing) {
  StopWhileIn("deleting", "DeleteMessageBatch", milliseconds(4000), 200);
}

TEST_F(SignalScenario, SecondSignalExitsAtOnceAndLosesNothing) {
  // Uploads take 20 s: a graceful stop would wait for them; the second signal must not.
  FaultPlan plan;
  plan.delay = FaultRule::Always({"S3:PUT"});
  plan.latency = milliseconds(20000);
  Lane& lane = MakeLane("second-signal", 100, plan);
  ASSERT_TRUE(lane.proxy);
  ASSERT_TRUE(StartArchiver(lane, {"--batch-max-messages", "20"}));
  SignalRun run = SignalWhileIn(lane, "S3:PUT", SIGTERM, SIGINT, seconds(15));
  const Child::Outcome& o = run.outcome;
  Accounting acc = Account(lane, o.exited_at);
  Report("second-signal-while-uploading", o,
         fmt::format("after_first={:.1f}s after_second={:.1f}s {}", run.after_signal_s, run.after_second_s,
                     acc.Summary()));
  EXPECT_TRUE(run.reached_state) << Describe(o);
  ASSERT_FALSE(o.killed) << "hung after two signals: " << Describe(o);
  EXPECT_EQ(o.exit_code, 130) << Describe(o);
  if (run.after_second_s >= 0) {
    EXPECT_LT(run.after_second_s, 3.0) << "the second signal did not stop it at once; " << Describe(o);
  } else {
    EXPECT_LT(run.after_signal_s, 1.5) << Describe(o);  // gone before the second signal was due
  }
  ExpectNothingLost(acc);
}

// FIFO: one message group, so receivers take turns (one probe at a time) for
// the whole run; on fauxqs each receive brings at most one message of a
// group, so every object holds one message and the run is a chain of
// receive, seal, upload, delete. A stop must keep the group's order: the
// archive is a prefix of what was sent, the rest is back in the queue.
class FifoSignalScenario : public FailureScenario {
 protected:
  struct FifoLane {
    std::string label;
    int sig = 0, second_sig = 0;
    FaultPlan plan;
    std::function<bool(const FaultProxyStats&)> state;
  };

  // Runs the lanes side by side (each on its own 1-group FIFO queue of
  // `messages`) and checks each one.
  void StopFifoDrains(std::vector<FifoLane> specs, int messages) {
    std::vector<Lane*> lanes;
    for (const FifoLane& spec : specs) {
      Lane& lane = MakeLane("fifo-" + spec.label, messages, spec.plan, /*fifo=*/true);
      ASSERT_TRUE(lane.proxy);
      ASSERT_TRUE(StartArchiver(lane, {}));
      lanes.push_back(&lane);
    }
    std::vector<std::future<SignalRun>> runs;
    for (size_t i = 0; i < lanes.size(); ++i) {
      runs.push_back(std::async(std::launch::async, SignalWhen, std::ref(*lanes[i]), specs[i].state, specs[i].sig,
                                specs[i].second_sig, seconds(30)));
    }
    for (size_t i = 0; i < lanes.size(); ++i) {
      const FifoLane& spec = specs[i];
      Lane& lane = *lanes[i];
      SignalRun run = runs[i].get();
      const Child::Outcome& o = run.outcome;
      FaultProxyStats ps = lane.proxy->Stats();
      Accounting acc = Account(lane, o.exited_at);
      Report("fifo-" + spec.label, o,
             fmt::format("after_signal={:.1f}s after_second={:.1f}s waited_for_visibility={} {} {}", run.after_signal_s,
                         run.after_second_s, acc.waited_for_visibility, acc.Summary(), FaultCounts(ps)));
      SCOPED_TRACE(lane.name);
      EXPECT_TRUE(run.reached_state && run.state_at_signal)
          << "not signalled in the state meant: reached=" << run.reached_state << " at_signal=" << run.state_at_signal
          << "; " << FaultCounts(ps) << "\n"
          << Describe(o);
      ASSERT_FALSE(o.killed) << "hung after the signal: " << Describe(o);
      EXPECT_EQ(o.exit_code, 130) << Describe(o);
      if (spec.second_sig != 0 && run.after_second_s >= 0) {
        EXPECT_LT(run.after_second_s, 3.0) << "the second signal did not stop it at once; " << Describe(o);
      } else {
        EXPECT_LT(run.after_signal_s, 10.0) << Describe(o);
      }
      ExpectNothingLost(acc);
      EXPECT_GT(acc.archived.size(), 0u) << "signalled before anything was archived: " << acc.Summary();
      EXPECT_LT(acc.archived.size(), lane.sent.size()) << "the stop came too late to leave anything: " << acc.Summary();
      if (spec.second_sig == 0) {
        // A graceful stop finishes the deletes of what it stored.
        EXPECT_EQ(acc.ArchivedAndBack(), 0u) << acc.Summary();
      }
      ExpectFifoOrderKept(lane, acc);
      // One group: the receivers took turns, one receive at a time.
      EXPECT_EQ(ps.MaxInFlight("ReceiveMessage"), 1) << FaultCounts(ps);
    }
  }

  // At least `n` uploads answered.
  static bool PutsDone(const FaultProxyStats& s, int64_t n) {
    return static_cast<int64_t>(s.Requests("S3:PUT")) - s.InFlight("S3:PUT") >= n;
  }
};

TEST_F(FifoSignalScenario, SignalDuringAOneGroupDrainExits130KeepsGroupOrderAndLosesNothing) {
  // Lanes side by side (the visibility waits overlap):
  // - turns: every receive answered 800 ms late; signalled while one is in
  //   flight, after two messages were stored.
  // - put: uploads answered 2 s late; signalled while the second is in
  //   flight, which finishes (its message is deleted).
  // - put-second-signal: uploads held 20 s; the second signal ends the
  //   process while the first is still held.
  FaultPlan turns;
  turns.delay = FaultRule::Always({"ReceiveMessage"});
  turns.latency = milliseconds(800);
  FaultPlan slow_put;
  slow_put.delay = FaultRule::Always({"S3:PUT"});
  slow_put.latency = milliseconds(2000);
  FaultPlan stuck_put = slow_put;
  stuck_put.latency = milliseconds(20000);
  auto receiving = [](const FaultProxyStats& s) { return PutsDone(s, 2) && s.InFlight("ReceiveMessage") > 0; };
  auto uploading = [](const FaultProxyStats& s) { return PutsDone(s, 1) && s.InFlight("S3:PUT") > 0; };
  auto first_upload = [](const FaultProxyStats& s) { return s.InFlight("S3:PUT") > 0; };
  StopFifoDrains({{"turns-term", SIGTERM, 0, turns, receiving},
                  {"turns-int", SIGINT, 0, turns, receiving},
                  {"put-term", SIGTERM, 0, slow_put, uploading},
                  {"put-int", SIGINT, 0, slow_put, uploading},
                  {"put-second-signal", SIGTERM, SIGINT, stuck_put, first_upload}},
                 24);
}

}  // namespace
}  // namespace dlq::it
