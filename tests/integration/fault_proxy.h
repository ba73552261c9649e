// FaultProxy: a loopback HTTP/1.1 proxy for integration tests. It listens on
// 127.0.0.1, port 0 (the kernel picks one), and forwards every request to one
// upstream base URL (a stand-in such as fauxqs, which serves SQS and S3 on one
// port), injecting the faults its FaultPlan names: S3 PUTs denied (403
// AccessDenied) once N have passed, S3 PUTs throttled (503 SlowDown), SQS
// calls failed (500 InternalError), connections closed before forwarding (the
// upstream never sees the request) or after it (the upstream applied it, the
// reply is lost), one byte of a message Body flipped in ReceiveMessage replies
// (so the client's MD5 check fails), messages handed out again, and latency added to replies.
//
// Requests are named for filters: an SQS call by its operation, from the
// X-Amz-Target header "AmazonSQS.<Op>" (e.g. "ReceiveMessage"); anything else
// is S3, named "S3:<METHOD>" ("S3:PUT" covers PutObject and UploadPart),
// except a ListObjectsV2 GET, named "S3:LIST".
//
// A dropped connection is closed without a byte of reply, so the client sees a
// transport error (libcurl 52, "Empty reply from server"), never an HTTP
// status. cpp-httplib's server cannot do that (it writes the status line before
// a content provider can fail), so the listening side is written here on plain
// sockets; cpp-httplib's client does the forwarding, one connection per
// request. libcurl re-sends a request once by itself when a reused connection
// closes with no reply, so one client call may reach the proxy twice.
//
// Headers are forwarded as received (the SigV4 Host names the proxy; the
// stand-ins do not check signatures) except hop-by-hop ones. Bodies are
// buffered whole; requests may use Content-Length or chunked encoding and
// "Expect: 100-continue".
//
// Thread-safety: every method may be called from any thread while requests
// are served; each client connection has its own thread and rule decisions
// draw from one seeded generator under a lock. Stop() (also run by the
// destructor) closes the listener, cuts open connections and pending delays
// short, and joins every thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/status.h"

namespace dlq::it {

// A fault that hits a matching request with `probability`, at most
// `max_count` times per plan. probability 1 with max_count N: the first N.
struct FaultRule {
  double probability = 0;     // 0..1
  std::set<std::string> ops;  // request names it applies to; empty: every request
  int64_t max_count = -1;     // -1: no limit

  static FaultRule Always(std::set<std::string> ops = {}) { return {1.0, std::move(ops), -1}; }
  static FaultRule Times(int64_t n, std::set<std::string> ops = {}) { return {1.0, std::move(ops), n}; }
  static FaultRule WithProbability(double p, std::set<std::string> ops = {}) { return {p, std::move(ops), -1}; }
};

struct FaultPlan {
  // S3 PUTs beyond the first `deny_puts_after` forwarded ones are answered
  // 403 AccessDenied (S3 XML error body); -1: never.
  int64_t deny_puts_after = -1;
  FaultRule s3_slowdown;   // S3 PUTs only: 503 SlowDown (S3 XML error body)
  FaultRule s3_deny;       // S3 requests only: 403 AccessDenied (S3 XML error body), e.g. {"S3:LIST"}
  FaultRule sqs_error;     // SQS calls only: 500 InternalError (AWS JSON 1.0 error body)
  FaultRule drop_before;   // connection closed; the request is not forwarded
  FaultRule drop_after;    // forwarded, then the connection is closed instead of replying
  FaultRule corrupt_body;  // ReceiveMessage replies holding a message: one Body byte flipped
  FaultRule delay;         // forwarded replies held back for `latency` first
  std::chrono::milliseconds latency{0};
  uint64_t seed = 1;

  // ReceiveMessage replies holding a message also carry the messages of the
  // previous such reply, handed out again: the proxy makes them visible
  // through the handles the client was given and receives them itself (new
  // handles, as SQS gives), as when a visibility timeout runs out or SQS
  // delivers a message twice. Those the client deleted meanwhile are gone.
  FaultRule repeat_messages;
  // repeat_messages hands the copies out with the handles the client already
  // has, as moto does when two receives race for one message.
  bool repeat_keeps_handles = false;
};

// Counts since Start(), whatever the plan.
struct FaultProxyStats {
  uint64_t requests = 0;
  uint64_t forwarded = 0;
  uint64_t puts_passed = 0;  // S3 PUTs forwarded
  uint64_t puts_denied = 0;
  uint64_t slowdowns = 0;
  uint64_t sqs_errors = 0;
  uint64_t dropped_before = 0;
  uint64_t dropped_after = 0;
  uint64_t corrupted = 0;
  uint64_t repeated = 0;  // messages handed out again by repeat_messages
  uint64_t delayed = 0;
  uint64_t upstream_failures = 0;                // upstream unreachable: answered 502
  uint64_t absolute_form = 0;                    // requests sent as to a forward proxy ("POST http://host/...")
  std::map<std::string, uint64_t> by_op;         // requests received, per request name
  std::map<std::string, int64_t> in_flight;      // admitted and not yet answered, per request name
  std::map<std::string, int64_t> max_in_flight;  // the most handled at once so far, per request name
  std::vector<std::string> denied_paths;         // request paths (no query) answered 403
  // Rule hits per rule and request name, e.g. {"drop_after ReceiveMessage", 3}.
  std::map<std::string, uint64_t> faults;

  uint64_t Requests(const std::string& op) const;
  int64_t InFlight(const std::string& op) const;
  int64_t MaxInFlight(const std::string& op) const;
};

class FaultProxy {
 public:
  // Starts serving on 127.0.0.1 with an ephemeral port. upstream: a base URL,
  // "http://host:port". Fails when the socket cannot be bound.
  static Result<std::unique_ptr<FaultProxy>> Start(std::string upstream, FaultPlan plan = {});
  ~FaultProxy();
  FaultProxy(const FaultProxy&) = delete;
  FaultProxy& operator=(const FaultProxy&) = delete;

  int port() const { return port_; }
  std::string url() const;  // "http://127.0.0.1:<port>"

  // Replaces the plan for requests that arrive from now on; rule hit counts,
  // the passed-PUT count and the generator start over. Stats are kept.
  void SetPlan(FaultPlan plan);
  FaultProxyStats Stats() const;
  // Polls until pred(Stats()) holds or `timeout` passes; returns whether it held.
  bool WaitFor(const std::function<bool(const FaultProxyStats&)>& pred, std::chrono::milliseconds timeout) const;
  void Stop();

 private:
  enum Rule { kSlowdown, kS3Deny, kSqsError, kDropBefore, kDropAfter, kCorrupt, kRepeat, kDelay, kRuleCount };
  struct Request;
  struct Decision;
  struct Worker {
    std::thread thread;
    std::shared_ptr<bool> done;  // guarded by mu_
  };

  FaultProxy(std::string upstream, FaultPlan plan) : upstream_(std::move(upstream)) { SetPlan(std::move(plan)); }

  void AcceptLoop();
  void Serve(int fd);
  // Decides what happens to a request that has been read (counts it too).
  Decision Admit(const Request& request, const std::string& op);
  bool RollLocked(Rule rule, const std::string& op);
  bool MaybeCorrupt(const std::string& op, std::string& body);
  // A message of a ReceiveMessage reply: id, receipt handle, its JSON text.
  struct Received {
    std::string id, handle, text;
  };
  void MaybeRepeat(const Request& req, const std::string& op, std::string& body);
  // `previous` made visible upstream and received again: the copies' JSON texts.
  std::vector<std::string> ReceiveAgain(const Request& req, const std::vector<Received>& previous);
  // An SQS JSON call upstream, with `like`'s path and signing headers; the
  // reply body when it answered 200.
  std::optional<std::string> CallSqs(const Request& like, const std::string& op, std::string body);
  // Visibility 0 for these handles; the indices of those it was applied to.
  std::set<size_t> SetVisible(const Request& like, const std::string& queue_url,
                              const std::vector<std::string>& handles);
  // Waits for `d` unless Stop() comes first; returns false when stopped.
  bool Sleep(std::chrono::milliseconds d);
  void Finish(const std::string& op);

  const std::string upstream_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::thread acceptor_;

  mutable std::mutex mu_;
  std::condition_variable stop_cv_;
  bool stopping_ = false;          // guarded by mu_
  FaultPlan plan_;                 // guarded by mu_
  std::mt19937_64 rng_;            // guarded by mu_
  int64_t hits_[kRuleCount] = {};  // guarded by mu_
  int64_t plan_puts_passed_ = 0;   // guarded by mu_
  FaultProxyStats stats_;          // guarded by mu_
  std::set<int> open_fds_;         // guarded by mu_
  std::list<Worker> workers_;      // guarded by mu_

  // The last ReceiveMessage reply's messages.
  std::vector<Received> last_received_;  // guarded by mu_
};

}  // namespace dlq::it
