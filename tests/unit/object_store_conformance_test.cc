// The ObjectStore specification (tests/conformance/object_store_spec.h) run
// against the fake and the local directory store. S3 on the stand-ins runs
// the same specification in the integration suite.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "conformance/object_store_spec.h"
#include "s3/local_object_store.h"
#include "testing/fake_object_store.h"

namespace dlq::conformance {
namespace {

namespace fs = std::filesystem;

// A directory removed with the store.
class TempDirStore final : public ObjectStore {
 public:
  TempDirStore()
      : dir_(fs::temp_directory_path() / fmt::format("dlq-spec-{}-{}", ::getpid(), RandomHex(6))),
        store_((fs::create_directories(dir_), dir_.string()), kSpecPageSize) {}
  ~TempDirStore() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Status Put(const std::string& key, std::string_view data, const PutOptions& options) override {
    return store_.Put(key, data, options);
  }
  Result<std::string> Get(const std::string& key, std::optional<std::pair<uint64_t, uint64_t>> range) override {
    return store_.Get(key, range);
  }
  Result<ObjectInfo> Head(const std::string& key) override { return store_.Head(key); }
  Result<ListPage> List(const std::string& prefix, const std::string& delimiter, const std::string& token) override {
    return store_.List(prefix, delimiter, token);
  }
  Status Delete(const std::string& key) override { return store_.Delete(key); }
  Result<DestinationCheck> CheckWritable() override { return store_.CheckWritable(); }
  std::string Describe() const override { return store_.Describe(); }

 private:
  fs::path dir_;
  LocalObjectStore store_;
};

INSTANTIATE_TEST_SUITE_P(
    Unit, ObjectStoreSpec,
    ::testing::Values(
        ObjectStoreTarget{"Fake",
                          [] { return std::make_shared<FakeObjectStore>("fake://spec", nullptr, kSpecPageSize); },
                          nullptr, "", ""},
        ObjectStoreTarget{"LocalDirectory", [] { return std::make_shared<TempDirStore>(); },
                          [] {
                            return std::make_shared<LocalObjectStore>(
                                (fs::temp_directory_path() / ("dlq-spec-missing-" + RandomHex(6))).string());
                          },
                          "", ""}),
    TargetName);

}  // namespace
}  // namespace dlq::conformance
