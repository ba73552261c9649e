#include "fault_proxy.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <httplib.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <simdjson.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <optional>
#include <string_view>
#include <utility>

#include "sqs/json_codec.h"

namespace dlq::it {
namespace {

using Headers = std::vector<std::pair<std::string, std::string>>;

constexpr size_t kMaxHeaderBytes = 64 << 10;
constexpr size_t kMaxBodyBytes = size_t{256} << 20;
constexpr auto kPollSlice = std::chrono::milliseconds(100);

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  }
  return true;
}

const std::string* FindHeader(const Headers& headers, std::string_view name) {
  for (const auto& [k, v] : headers) {
    if (IEquals(k, name)) return &v;
  }
  return nullptr;
}

std::string_view TrimView(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

// Hop-by-hop headers (RFC 9110 7.6.1) plus the framing ones the proxy sets
// itself, and any header the Connection header lists.
bool IsHopByHop(std::string_view name, const Headers& headers) {
  static constexpr std::string_view kNames[] = {"connection",
                                                "keep-alive",
                                                "proxy-connection",
                                                "proxy-authenticate",
                                                "proxy-authorization",
                                                "te",
                                                "trailer",
                                                "transfer-encoding",
                                                "upgrade",
                                                "expect",
                                                "content-length"};
  for (std::string_view n : kNames) {
    if (IEquals(name, n)) return true;
  }
  if (const std::string* conn = FindHeader(headers, "Connection")) {
    std::string_view rest = *conn;
    while (!rest.empty()) {
      size_t comma = rest.find(',');
      if (IEquals(TrimView(rest.substr(0, comma)), name)) return true;
      if (comma == std::string_view::npos) break;
      rest.remove_prefix(comma + 1);
    }
  }
  return false;
}

std::string_view Reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 206: return "Partial Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 409: return "Conflict";
    case 412: return "Precondition Failed";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    default: return "Status";
  }
}

// Flips the case of the first ASCII letter of a message Body in a
// ReceiveMessage JSON reply: the JSON stays valid, the MD5 no longer matches.
bool FlipBodyByte(std::string& json) {
  static constexpr std::string_view kKey = "\"Body\"";
  for (size_t at = json.find(kKey); at != std::string::npos; at = json.find(kKey, at + 1)) {
    size_t i = at + kKey.size();
    while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
    if (i >= json.size() || json[i] != ':') continue;
    ++i;
    while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
    if (i >= json.size() || json[i] != '"') continue;
    for (++i; i < json.size() && json[i] != '"'; ++i) {
      if (json[i] == '\\') {
        i += (i + 1 < json.size() && json[i + 1] == 'u') ? 5 : 1;  // skip the escape
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(json[i]))) {
        json[i] = static_cast<char>(json[i] ^ 0x20);
        return true;
      }
    }
  }
  return false;
}

// The elements of a ReceiveMessage JSON reply's "Messages" array: each
// object's text, and where the array's closing bracket is (npos when there
// is no such array, or it does not end).
struct MessagesArray {
  std::vector<std::string> elements;
  size_t end = std::string::npos;
};

MessagesArray FindMessages(const std::string& json) {
  static constexpr std::string_view kKey = "\"Messages\"";
  size_t i = json.find(kKey);
  if (i == std::string::npos) return {};
  i += kKey.size();
  auto skip_space = [&] {
    while (i < json.size() && std::isspace(static_cast<unsigned char>(json[i]))) ++i;
  };
  skip_space();
  if (i >= json.size() || json[i] != ':') return {};
  ++i;
  skip_space();
  if (i >= json.size() || json[i] != '[') return {};
  MessagesArray out;
  int depth = 0;
  size_t element = 0;
  for (bool in_string = false; ++i < json.size();) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (depth++ == 0) element = i;
    } else if (c == '}' || c == ']') {
      if (depth-- == 0) {
        out.end = i;
        return out;
      }
      if (depth == 0) out.elements.push_back(json.substr(element, i + 1 - element));
    }
  }
  return {};  // unterminated: leave the reply alone
}

// A message's id and receipt handle, from one element of "Messages".
std::optional<std::pair<std::string, std::string>> IdAndHandle(const std::string& element) {
  auto parsed = sqs::ParseReceiveMessageResponse("{\"Messages\":[" + element + "]}");
  if (!parsed.ok() || parsed->size() != 1) return std::nullopt;
  return std::make_pair(parsed->front().message_id, parsed->front().receipt_handle);
}

// One client connection: buffered reads that give up when the proxy stops.
class Connection {
 public:
  Connection(int fd, const std::function<bool()>& stopping) : fd_(fd), stopping_(stopping) {}

  enum class ReadResult { kOk, kClosed, kBad };

  ReadResult ReadRequest(std::string& method, std::string& target, Headers& headers, std::string& body,
                         bool& close_after) {
    size_t end;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (buf_.size() > kMaxHeaderBytes) return ReadResult::kBad;
      if (!Fill()) return ReadResult::kClosed;
    }
    std::string_view head(buf_.data(), end);
    size_t line_end = head.find("\r\n");
    std::string_view request_line = head.substr(0, line_end);
    size_t sp1 = request_line.find(' ');
    size_t sp2 = request_line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 == sp1) return ReadResult::kBad;
    method = std::string(request_line.substr(0, sp1));
    target = std::string(request_line.substr(sp1 + 1, sp2 - sp1 - 1));
    std::string_view version = request_line.substr(sp2 + 1);
    headers.clear();
    for (size_t pos = line_end == std::string_view::npos ? head.size() : line_end + 2; pos < head.size();) {
      size_t next = head.find("\r\n", pos);
      if (next == std::string_view::npos) next = head.size();
      std::string_view line = head.substr(pos, next - pos);
      size_t colon = line.find(':');
      if (colon == std::string_view::npos) return ReadResult::kBad;
      headers.emplace_back(std::string(TrimView(line.substr(0, colon))), std::string(TrimView(line.substr(colon + 1))));
      pos = next + 2;
    }
    buf_.erase(0, end + 4);

    const std::string* conn = FindHeader(headers, "Connection");
    close_after = version == "HTTP/1.0" ? !(conn && IEquals(*conn, "keep-alive")) : (conn && IEquals(*conn, "close"));
    if (const std::string* expect = FindHeader(headers, "Expect"); expect && IEquals(*expect, "100-continue")) {
      if (!Write("HTTP/1.1 100 Continue\r\n\r\n")) return ReadResult::kClosed;
    }
    body.clear();
    if (const std::string* te = FindHeader(headers, "Transfer-Encoding"); te && !IEquals(*te, "identity")) {
      return ReadChunked(body);
    }
    size_t length = 0;
    if (const std::string* cl = FindHeader(headers, "Content-Length")) {
      try {
        length = std::stoull(*cl);
      } catch (...) {
        return ReadResult::kBad;
      }
    }
    if (length > kMaxBodyBytes) return ReadResult::kBad;
    while (buf_.size() < length) {
      if (!Fill()) return ReadResult::kClosed;
    }
    body = buf_.substr(0, length);
    buf_.erase(0, length);
    return ReadResult::kOk;
  }

  bool Write(std::string_view data) {
    while (!data.empty()) {
      ssize_t n = ::send(fd_, data.data(), data.size(), MSG_NOSIGNAL);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      data.remove_prefix(static_cast<size_t>(n));
    }
    return true;
  }

 private:
  // Reads more bytes into buf_; false on EOF, error or stop.
  bool Fill() {
    while (!stopping_()) {
      pollfd p{fd_, POLLIN, 0};
      int r = ::poll(&p, 1, static_cast<int>(kPollSlice.count()));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) return false;
      if (r == 0) continue;
      char chunk[64 << 10];
      ssize_t n = ::recv(fd_, chunk, sizeof(chunk), 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf_.append(chunk, static_cast<size_t>(n));
      return true;
    }
    return false;
  }

  bool ReadLine(std::string& line) {
    size_t eol;
    while ((eol = buf_.find("\r\n")) == std::string::npos) {
      if (buf_.size() > kMaxHeaderBytes) return false;
      if (!Fill()) return false;
    }
    line = buf_.substr(0, eol);
    buf_.erase(0, eol + 2);
    return true;
  }

  ReadResult ReadChunked(std::string& body) {
    for (;;) {
      std::string line;
      if (!ReadLine(line)) return ReadResult::kClosed;
      size_t size = 0;
      try {
        size = std::stoull(line.substr(0, line.find(';')), nullptr, 16);
      } catch (...) {
        return ReadResult::kBad;
      }
      if (size == 0) break;
      if (body.size() + size > kMaxBodyBytes) return ReadResult::kBad;
      while (buf_.size() < size + 2) {
        if (!Fill()) return ReadResult::kClosed;
      }
      body.append(buf_, 0, size);
      buf_.erase(0, size + 2);
    }
    for (std::string trailer;;) {  // trailers end with an empty line
      if (!ReadLine(trailer)) return ReadResult::kClosed;
      if (trailer.empty()) return ReadResult::kOk;
    }
  }

  int fd_;
  const std::function<bool()>& stopping_;
  std::string buf_;
};

struct Reply {
  int status = 0;
  Headers headers;
  std::string body;
};

Reply S3Error(int status, std::string_view code, std::string_view message, uint64_t n) {
  Reply r;
  r.status = status;
  std::string id = fmt::format("FAULTPROXY{:06}", n);
  r.headers = {{"Content-Type", "application/xml"}, {"x-amz-request-id", id}};
  r.body = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>{}</Code><Message>{}</Message>"
      "<RequestId>{}</RequestId><HostId>fault-proxy</HostId></Error>",
      code, message, id);
  return r;
}

Reply SqsInternalError(uint64_t n) {
  Reply r;
  r.status = 500;
  std::string id = fmt::format("fault-proxy-{:06}", n);
  r.headers = {{"Content-Type", "application/x-amz-json-1.0"}, {"x-amzn-RequestId", id}};
  r.body =
      R"({"__type":"com.amazonaws.sqs#InternalError","message":"We encountered an internal error. Please try again."})";
  return r;
}

bool WriteReply(Connection& conn, const Reply& reply, bool head, bool close_after) {
  std::string out = fmt::format("HTTP/1.1 {} {}\r\n", reply.status, Reason(reply.status));
  for (const auto& [k, v] : reply.headers) out += k + ": " + v + "\r\n";
  if (!head) out += fmt::format("Content-Length: {}\r\n", reply.body.size());
  if (close_after) out += "Connection: close\r\n";
  out += "\r\n";
  if (!head) out += reply.body;
  return conn.Write(out);
}

}  // namespace

struct FaultProxy::Request {
  std::string method, target;
  Headers headers;
  std::string body;
};

struct FaultProxy::Decision {
  enum class Action { kForward, kDropBefore, kDeny, kSlowdown, kSqsError } action = Action::kForward;
  bool drop_after = false;
  std::chrono::milliseconds delay{0};
  uint64_t serial = 0;
};

uint64_t FaultProxyStats::Requests(const std::string& op) const {
  auto it = by_op.find(op);
  return it == by_op.end() ? 0 : it->second;
}

int64_t FaultProxyStats::InFlight(const std::string& op) const {
  auto it = in_flight.find(op);
  return it == in_flight.end() ? 0 : it->second;
}

int64_t FaultProxyStats::MaxInFlight(const std::string& op) const {
  auto it = max_in_flight.find(op);
  return it == max_in_flight.end() ? 0 : it->second;
}

Result<std::unique_ptr<FaultProxy>> FaultProxy::Start(std::string upstream, FaultPlan plan) {
  if (upstream.rfind("http://", 0) != 0) return InvalidArgument("fault proxy: upstream must be http://host:port");
  std::unique_ptr<FaultProxy> proxy(new FaultProxy(std::move(upstream), std::move(plan)));
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Unavailable(fmt::format("fault proxy: socket: {}", std::strerror(errno)));
  int one = 1;
  ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, 256) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    std::string err = std::strerror(errno);
    ::close(fd);
    return Unavailable("fault proxy: bind 127.0.0.1:0: " + err);
  }
  proxy->listen_fd_ = fd;
  proxy->port_ = ntohs(addr.sin_port);
  proxy->acceptor_ = std::thread([p = proxy.get()] { p->AcceptLoop(); });
  return proxy;
}

FaultProxy::~FaultProxy() {
  Stop();
}

std::string FaultProxy::url() const {
  return fmt::format("http://127.0.0.1:{}", port_);
}

void FaultProxy::SetPlan(FaultPlan plan) {
  std::lock_guard<std::mutex> lock(mu_);
  rng_.seed(plan.seed);
  plan_ = std::move(plan);
  for (int64_t& h : hits_) h = 0;
  plan_puts_passed_ = 0;
}

FaultProxyStats FaultProxy::Stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

bool FaultProxy::WaitFor(const std::function<bool(const FaultProxyStats&)>& pred,
                         std::chrono::milliseconds timeout) const {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    if (pred(Stats())) return true;
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void FaultProxy::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  stop_cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  if (listen_fd_ >= 0) ::close(listen_fd_);
  std::list<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) ::shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (Worker& w : workers) w.thread.join();
}

void FaultProxy::AcceptLoop() {
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) return;
      for (auto it = workers_.begin(); it != workers_.end();) {  // reap finished connections
        if (*it->done) {
          it->thread.join();
          it = workers_.erase(it);
        } else {
          ++it;
        }
      }
    }
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(kPollSlice.count())) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      ::close(fd);
      return;
    }
    open_fds_.insert(fd);
    auto done = std::make_shared<bool>(false);
    workers_.push_back(Worker{std::thread([this, fd, done] {
                                Serve(fd);
                                std::lock_guard<std::mutex> l(mu_);
                                open_fds_.erase(fd);
                                ::close(fd);
                                *done = true;
                              }),
                              done});
  }
}

bool FaultProxy::RollLocked(Rule rule, const std::string& op) {
  const FaultRule* r = nullptr;
  std::string_view name;
  switch (rule) {
    case kSlowdown: r = &plan_.s3_slowdown, name = "s3_slowdown"; break;
    case kS3Deny: r = &plan_.s3_deny, name = "s3_deny"; break;
    case kSqsError: r = &plan_.sqs_error, name = "sqs_error"; break;
    case kDropBefore: r = &plan_.drop_before, name = "drop_before"; break;
    case kDropAfter: r = &plan_.drop_after, name = "drop_after"; break;
    case kCorrupt: r = &plan_.corrupt_body, name = "corrupt_body"; break;
    case kRepeat: r = &plan_.repeat_messages, name = "repeat_messages"; break;
    case kDelay: r = &plan_.delay, name = "delay"; break;
    case kRuleCount: return false;
  }
  if (r->probability <= 0) return false;
  if (!r->ops.empty() && r->ops.count(op) == 0) return false;
  if (r->max_count >= 0 && hits_[rule] >= r->max_count) return false;
  if (r->probability < 1 && std::uniform_real_distribution<double>(0, 1)(rng_) >= r->probability) return false;
  ++hits_[rule];
  ++stats_.faults[fmt::format("{} {}", name, op)];
  return true;
}

FaultProxy::Decision FaultProxy::Admit(const Request& request, const std::string& op) {
  std::lock_guard<std::mutex> lock(mu_);
  Decision d;
  d.serial = ++stats_.requests;
  ++stats_.by_op[op];
  int64_t& max = stats_.max_in_flight[op];
  max = std::max(max, ++stats_.in_flight[op]);
  bool sqs = op.rfind("S3:", 0) != 0;
  if (RollLocked(kDropBefore, op)) {
    ++stats_.dropped_before;
    d.action = Decision::Action::kDropBefore;
    return d;
  }
  if (!sqs && RollLocked(kS3Deny, op)) {
    d.action = Decision::Action::kDeny;
    return d;
  }
  if (!sqs && request.method == "PUT") {
    if (plan_.deny_puts_after >= 0 && plan_puts_passed_ >= plan_.deny_puts_after) {
      ++stats_.puts_denied;
      stats_.denied_paths.push_back(request.target.substr(0, request.target.find('?')));
      d.action = Decision::Action::kDeny;
      return d;
    }
    if (RollLocked(kSlowdown, op)) {
      ++stats_.slowdowns;
      d.action = Decision::Action::kSlowdown;
      return d;
    }
    ++plan_puts_passed_;
    ++stats_.puts_passed;
  }
  if (sqs && RollLocked(kSqsError, op)) {
    ++stats_.sqs_errors;
    d.action = Decision::Action::kSqsError;
    return d;
  }
  ++stats_.forwarded;
  if (RollLocked(kDropAfter, op)) {
    ++stats_.dropped_after;
    d.drop_after = true;
  } else if (RollLocked(kDelay, op)) {
    ++stats_.delayed;
    d.delay = plan_.latency;
  }
  return d;
}

bool FaultProxy::MaybeCorrupt(const std::string& op, std::string& body) {
  if (op != "ReceiveMessage" || body.find("\"Body\"") == std::string::npos) return false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!RollLocked(kCorrupt, op)) return false;
  }
  bool flipped = FlipBodyByte(body);
  std::lock_guard<std::mutex> lock(mu_);
  if (flipped) {
    ++stats_.corrupted;
  } else {
    --hits_[kCorrupt];  // nothing to flip: the rule is not spent
    --stats_.faults["corrupt_body " + op];
  }
  return flipped;
}

std::optional<std::string> FaultProxy::CallSqs(const Request& like, const std::string& op, std::string body) {
  httplib::Client upstream(upstream_);
  upstream.set_keep_alive(false);
  upstream.set_connection_timeout(std::chrono::seconds(5));
  upstream.set_read_timeout(std::chrono::seconds(30));
  httplib::Request out;
  out.method = "POST";
  out.path = like.target;
  for (const auto& [k, v] : like.headers) {
    if (!IsHopByHop(k, like.headers) && !IEquals(k, "X-Amz-Target") && !IEquals(k, "Content-Length") &&
        !IEquals(k, "Content-Type")) {
      out.headers.emplace(k, v);
    }
  }
  out.headers.emplace("X-Amz-Target", "AmazonSQS." + op);
  out.headers.emplace("Content-Type", "application/x-amz-json-1.0");
  out.body = std::move(body);
  httplib::Response in;
  httplib::Error err = httplib::Error::Success;
  if (!upstream.send(out, in, err) || in.status != 200) return std::nullopt;
  return std::move(in.body);
}

std::set<size_t> FaultProxy::SetVisible(const Request& like, const std::string& queue_url,
                                        const std::vector<std::string>& handles) {
  std::set<size_t> visible;
  for (size_t begin = 0; begin < handles.size(); begin += 10) {
    std::vector<VisibilityEntry> entries;
    for (size_t i = begin; i < std::min(handles.size(), begin + 10); ++i) {
      entries.push_back({std::to_string(i - begin), handles[i], 0});
    }
    auto reply = CallSqs(like, "ChangeMessageVisibilityBatch",
                         sqs::BuildChangeMessageVisibilityBatchRequest(queue_url, entries));
    auto result = reply ? sqs::ParseBatchResponse(*reply) : Result<BatchResult>(Status(ErrorCode::kInternal, "none"));
    if (!result.ok()) continue;
    for (const std::string& id : result->successful_ids) visible.insert(begin + std::stoul(id));
  }
  return visible;
}

void FaultProxy::MaybeRepeat(const Request& req, const std::string& op, std::string& body) {
  if (op != "ReceiveMessage") return;
  MessagesArray now = FindMessages(body);
  if (now.elements.empty()) return;
  std::vector<Received> current, previous;
  for (const std::string& e : now.elements) {
    if (auto m = IdAndHandle(e)) current.push_back({m->first, m->second, e});
  }
  bool keep_handles = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    bool hit = !last_received_.empty() && RollLocked(kRepeat, op);
    if (hit) previous = std::move(last_received_);
    last_received_ = current;
    keep_handles = plan_.repeat_keeps_handles;
    if (!hit) return;
  }
  std::vector<std::string> copies;
  if (keep_handles) {
    for (const Received& m : previous) copies.push_back(m.text);
  } else {
    copies = ReceiveAgain(req, previous);
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (copies.empty()) {
    --hits_[kRepeat];  // nothing came back: the rule is not spent
    --stats_.faults["repeat_messages " + op];
    return;
  }
  std::string insert;
  for (const std::string& e : copies) insert += "," + e;
  body.insert(now.end, insert);
  stats_.repeated += copies.size();
}

std::vector<std::string> FaultProxy::ReceiveAgain(const Request& req, const std::vector<Received>& previous) {
  simdjson::dom::parser parser;
  std::string_view queue_url;
  if (parser.parse(req.body)["QueueUrl"].get(queue_url) != simdjson::SUCCESS) return {};
  const std::string url(queue_url);
  // Visible again, through the handles the client was given (the ones it
  // has deleted since are gone), then received again: new handles, as SQS
  // gives a message it hands out again.
  std::vector<std::string> handles;
  for (const Received& m : previous) handles.push_back(m.handle);
  std::set<std::string> wanted;
  for (size_t i : SetVisible(req, url, handles)) wanted.insert(previous[i].id);
  std::vector<std::string> copies, others;
  for (int attempt = 0; attempt < 20 && !wanted.empty(); ++attempt) {
    auto extra = CallSqs(req, "ReceiveMessage", req.body);
    if (!extra) break;
    MessagesArray got = FindMessages(*extra);
    if (got.elements.empty()) break;
    for (const std::string& e : got.elements) {
      auto m = IdAndHandle(e);
      if (!m) continue;
      if (wanted.erase(m->first) > 0) {
        copies.push_back(e);
      } else {
        others.push_back(m->second);  // held until the end, or the next receive returns it first again
      }
    }
  }
  (void)SetVisible(req, url, others);
  return copies;
}

bool FaultProxy::Sleep(std::chrono::milliseconds d) {
  std::unique_lock<std::mutex> lock(mu_);
  return !stop_cv_.wait_for(lock, d, [this] { return stopping_; });
}

void FaultProxy::Finish(const std::string& op) {
  std::lock_guard<std::mutex> lock(mu_);
  --stats_.in_flight[op];
}

void FaultProxy::Serve(int fd) {
  std::function<bool()> stopping = [this] {
    std::lock_guard<std::mutex> lock(mu_);
    return stopping_;
  };
  Connection conn(fd, stopping);
  for (;;) {
    Request req;
    bool close_after = false;
    if (conn.ReadRequest(req.method, req.target, req.headers, req.body, close_after) != Connection::ReadResult::kOk) {
      return;
    }
    // A client that was told to use this as its HTTP proxy (HTTP_PROXY) sends
    // the absolute URL: forward it in origin form, as a forward proxy does.
    if (req.target.rfind("http://", 0) == 0) {
      const size_t path = req.target.find('/', 7);
      req.target = path == std::string::npos ? "/" : req.target.substr(path);
      std::lock_guard<std::mutex> lock(mu_);
      ++stats_.absolute_form;
    }
    std::string op;
    const std::string* target = FindHeader(req.headers, "X-Amz-Target");
    if (req.method == "POST" && target && target->rfind("AmazonSQS.", 0) == 0) {
      op = target->substr(std::string_view("AmazonSQS.").size());
    } else if (req.method == "GET" && req.target.find("list-type=2") != std::string::npos) {
      op = "S3:LIST";
    } else {
      op = "S3:" + req.method;
    }
    Decision d = Admit(req, op);
    bool head = req.method == "HEAD";
    Reply reply;
    switch (d.action) {
      case Decision::Action::kDropBefore: Finish(op); return;  // the caller closes the socket: no byte of reply
      case Decision::Action::kDeny: reply = S3Error(403, "AccessDenied", "Access Denied", d.serial); break;
      case Decision::Action::kSlowdown:
        reply = S3Error(503, "SlowDown", "Please reduce your request rate.", d.serial);
        break;
      case Decision::Action::kSqsError: reply = SqsInternalError(d.serial); break;
      case Decision::Action::kForward: {
        httplib::Client upstream(upstream_);
        upstream.set_keep_alive(false);  // a fresh connection per request: no stale keep-alive failures
        upstream.set_url_encode(false);  // the target is already encoded
        upstream.set_decompress(false);  // bodies pass byte for byte
        upstream.set_connection_timeout(std::chrono::seconds(5));
        upstream.set_read_timeout(std::chrono::seconds(60));
        upstream.set_write_timeout(std::chrono::seconds(60));
        httplib::Request out;
        out.method = req.method;
        out.path = req.target;
        for (const auto& [k, v] : req.headers) {
          if (!IsHopByHop(k, req.headers)) out.headers.emplace(k, v);
        }
        if (!out.has_header("Accept-Encoding")) out.headers.emplace("Accept-Encoding", "identity");
        out.body = req.body;
        httplib::Response in;
        httplib::Error err = httplib::Error::Success;
        if (!upstream.send(out, in, err)) {
          {
            std::lock_guard<std::mutex> lock(mu_);
            ++stats_.upstream_failures;
          }
          reply.status = 502;
          reply.headers = {{"Content-Type", "text/plain"}};
          reply.body = "fault proxy: upstream " + upstream_ + ": " + httplib::to_string(err);
          break;
        }
        Headers in_headers(in.headers.begin(), in.headers.end());
        reply.status = in.status;
        for (const auto& [k, v] : in_headers) {
          bool keep_length = head && IEquals(k, "Content-Length");
          if (keep_length || !IsHopByHop(k, in_headers)) reply.headers.emplace_back(k, v);
        }
        reply.body = std::move(in.body);
        if (d.drop_after) {
          Finish(op);
          return;  // applied upstream; the reply is lost
        }
        if (reply.status == 200) {
          MaybeRepeat(req, op, reply.body);
          MaybeCorrupt(op, reply.body);
        }
        if (d.delay.count() > 0 && !Sleep(d.delay)) {
          Finish(op);
          return;
        }
        break;
      }
    }
    // Out of flight before the reply goes out: a client that gets it may send
    // its next request at once, on another connection, and another thread
    // must not count it in flight beside this one (under load this thread
    // can be descheduled between the write and the count).
    Finish(op);
    bool written = WriteReply(conn, reply, head, close_after);
    if (!written || close_after) return;
  }
}

}  // namespace dlq::it
