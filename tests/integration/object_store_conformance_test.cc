// The ObjectStore specification (tests/conformance/object_store_spec.h) run
// against S3 on the stand-ins: moto and fauxqs, each test on a new bucket.
#include "conformance/object_store_spec.h"
#include "harness.h"
#include "s3/s3_object_store.h"

namespace dlq::conformance {
namespace {

// An S3 store on a stand-in; `create` makes its bucket first. nullptr when
// the stand-in is not running (a failure when DLQ_REQUIRE_STAND_INS is set).
std::shared_ptr<ObjectStore> S3On(const std::string& stand_in, bool create) {
  std::shared_ptr<AwsServices> services = it::StandInServices(stand_in);
  if (services == nullptr) return nullptr;
  const std::string bucket = it::UniqueName("spec");
  S3Client& client = services->s3_for(bucket);
  if (create) {
    Status st = client.CreateBucket(bucket);
    EXPECT_TRUE(st.ok()) << st.ToString();
  }
  auto* store = new S3ObjectStore(client, bucket, static_cast<int>(kSpecPageSize));
  return std::shared_ptr<ObjectStore>(store, [services](ObjectStore* p) { delete p; });
}

ObjectStoreTarget Target(const std::string& stand_in, const std::string& name, std::string ignores_create_only) {
  return ObjectStoreTarget{name, [stand_in] { return S3On(stand_in, true); },
                           [stand_in] { return S3On(stand_in, false); },
                           "stand-in " + stand_in + " not running (scripts/stand-ins start " + stand_in + ")",
                           std::move(ignores_create_only)};
}

INSTANTIATE_TEST_SUITE_P(StandIns, ObjectStoreSpec,
                         ::testing::Values(Target("moto", "S3OnMoto", ""),
                                           Target("fauxqs", "S3OnFauxqs",
                                                  "fauxqs ignores If-None-Match: * and overwrites "
                                                  "(doc/stand-ins.md)")),
                         TargetName);

}  // namespace
}  // namespace dlq::conformance
