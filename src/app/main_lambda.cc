// dlq-archive-lambda: the Lambda custom runtime as a program of its own, the
// `dlq-archive lambda` command without the rest of the CLI, linked without
// libcurl or cpp-httplib: it defines MakeDefaultTransport
// (aws/default_transport.h) over SocketTransport, so the library's libcurl
// definition is never linked, and CMakeLists.txt links OpenSSL and the other
// libraries Debian ships as static archives into it (a cold start is mostly
// the loader's work per shared library; bench/lambda/README.md). The
// package's bootstrap runs it (scripts/package-lambda, doc/lambda.md).
// Configured by environment variables only; any arguments are ignored.
#include <malloc.h>

#include <atomic>
#include <csignal>

#include "app/lambda_command.h"
#include "aws/default_transport.h"
#include "aws/socket_transport.h"
#include "common/log.h"

namespace dlq {

Result<std::unique_ptr<HttpTransport>> MakeDefaultTransport(const TransportSettings& settings) {
  DLQ_ASSIGN_OR_RETURN(auto transport, SocketTransport::Create(settings));
  return std::unique_ptr<HttpTransport>(std::move(transport));
}

}  // namespace dlq

namespace {

std::atomic<bool> g_stop{false};

extern "C" void OnSignal(int) {
  g_stop = true;
}

}  // namespace

int main() {
  mallopt(M_MMAP_THRESHOLD, 1 << 20);  // as the CLI: batch buffers go back to the OS
  mallopt(M_ARENA_MAX, 4);
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  dlq::SetLogger(std::make_unique<dlq::StreamLogger>(stderr, dlq::LogFormat::kText, dlq::LogLevel::kInfo));
  dlq::ServicesOptions options;  // the CLI's defaults: 5 s connect, 70 s read, 6 attempts
  return dlq::RunLambdaCommand(options, g_stop);
}
