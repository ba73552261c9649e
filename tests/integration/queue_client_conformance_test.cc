// The QueueClient specification (tests/conformance/queue_client_spec.h) run
// against SqsClient over the stand-ins: fauxqs (AWS JSON 1.0) and moto.
#include "conformance/queue_client_spec.h"
#include "harness.h"

namespace dlq::conformance {
namespace {

std::shared_ptr<QueueClient> SqsOn(const std::string& stand_in) {
  std::shared_ptr<AwsServices> services = it::StandInServices(stand_in);
  if (services == nullptr) return nullptr;
  return std::shared_ptr<QueueClient>(services, &services->sqs());
}

QueueClientTarget Target(const std::string& stand_in, const std::string& name) {
  QueueClientTarget t{name,
                      [stand_in] { return SqsOn(stand_in); },
                      "stand-in " + stand_in + " not running (scripts/stand-ins start " + stand_in + ")",
                      "",
                      "",
                      ""};
  if (stand_in == "fauxqs") {
    t.no_dead_letter_source_listing = "fauxqs has no ListDeadLetterSourceQueues (InvalidAction; doc/stand-ins.md)";
    t.accepts_bogus_delete_handles = "fauxqs reports success for a receipt handle it never issued (doc/stand-ins.md)";
  }
  if (stand_in == "moto") {
    t.accepts_invalid_characters = "moto accepts bodies with characters SQS rejects, e.g. U+0001 (doc/stand-ins.md)";
  }
  return t;
}

INSTANTIATE_TEST_SUITE_P(StandIns, QueueClientSpec,
                         ::testing::Values(Target("fauxqs", "SqsOnFauxqs"), Target("moto", "SqsOnMoto")),
                         QueueTargetName);

}  // namespace
}  // namespace dlq::conformance
