// libFuzzer target for what the dashboard's HTTP clients send: the bytes as a
// query string (and, when it parses, as a search request), as API paths, and
// as a replay request body. Nothing may crash; accepted values must keep the
// parsers' promises (bounded counts, valid queue names and ids, ids or a
// group, a function only with "to": "origin").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "dashboard/request.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  auto params = dlq::ParseQueryString(bytes);
  if (params.ok()) {
    if (params->size() > dlq::kMaxQueryParams) std::abort();
    auto search = dlq::ParseSearchRequest(*params);
    if (search.ok() && (search->limit < 1 || search->limit > dlq::kMaxSearchResults ||
                        search->flags.queues.size() != 1 || !dlq::IsQueueName(search->flags.queues[0]))) {
      std::abort();
    }
  }
  if (auto qp = dlq::ParseQueuePath("/api/queues/" + std::string(bytes))) {
    if (!dlq::IsQueueName(qp->queue) || qp->view.find('/') != std::string::npos) std::abort();
  }
  if (auto id = dlq::ParseMessagePath("/api/messages/" + std::string(bytes))) {
    if (id->empty() || id->size() > 128) std::abort();
  }
  auto replay = dlq::ParseReplayRequest(bytes);
  if (replay.ok() && (replay->ids.empty() == replay->fingerprint.empty() || replay->ids.size() > dlq::kMaxReplayIds ||
                      !dlq::IsQueueName(replay->queue) || (!replay->function.empty() && !replay->to_origin))) {
    std::abort();
  }
  return 0;
}
