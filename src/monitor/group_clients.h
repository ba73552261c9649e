// The clients a monitored group works with, built per group by a factory
// (app/run_command.h builds them over AWS; tests pass fakes).
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "common/status.h"
#include "monitor/config.h"
#include "s3/object_store.h"
#include "sqs/sqs_client.h"

namespace dlq {

class CloudWatchClient;
class EventsApi;
class HttpTransport;
class LambdaApi;
class LogsClient;
class SnsApi;

// The clients one group works with. The pointers stay valid as long as
// `keepalive` (which owns what they point into, or is empty when the caller
// owns them for the daemon's lifetime).
struct GroupClients {
  QueueClient* sqs = nullptr;
  ObjectStore* store = nullptr;
  CloudWatchClient* cloudwatch = nullptr;  // optional: for cloudwatch_age
  // Optional: for the cause lookups (causes: auto|on); without both, none.
  LogsClient* logs = nullptr;
  LambdaApi* lambda = nullptr;  // also the dashboard's replay to origin
  // Optional: the dashboard's replay to origin (doc/origins.md); without
  // one, an origin that needs it is refused, named.
  SnsApi* sns = nullptr;
  EventsApi* events = nullptr;
  HttpTransport* http = nullptr;  // an SNS subscription's HTTP/S endpoint
  std::string default_region;
  std::string destination_uri;  // e.g. "s3://bucket/" for logs
  std::shared_ptr<void> keepalive;
};
using GroupClientsFactory = std::function<Result<GroupClients>(const GroupConfig&)>;

}  // namespace dlq
