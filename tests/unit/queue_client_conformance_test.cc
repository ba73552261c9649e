// The QueueClient specification (tests/conformance/queue_client_spec.h) run
// against the fake. SqsClient on fauxqs and moto runs the same specification
// in the integration suite.
#include "conformance/queue_client_spec.h"
#include "testing/fake_clock.h"
#include "testing/fake_queue.h"

namespace dlq::conformance {
namespace {

std::shared_ptr<QueueClient> MakeFake() {
  auto clock = std::make_shared<FakeClock>();
  auto fake = std::make_shared<FakeQueueClient>(*clock);
  // The clock lives as long as the client.
  return std::shared_ptr<QueueClient>(fake.get(), [fake, clock](QueueClient*) {});
}

INSTANTIATE_TEST_SUITE_P(Unit, QueueClientSpec, ::testing::Values(QueueClientTarget{"Fake", MakeFake, "", "", "", ""}),
                         QueueTargetName);

}  // namespace
}  // namespace dlq::conformance
