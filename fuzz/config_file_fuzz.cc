// libFuzzer target: the shared config/credentials parser must never crash,
// hang or read out of bounds, whatever the bytes.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "aws/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = dlq::ParseConfigFile(text, dlq::ConfigFileKind::kConfig, "fuzz-config");
  auto credentials = dlq::ParseConfigFile(text, dlq::ConfigFileKind::kCredentials, "fuzz-credentials");
  if (config.ok() && credentials.ok()) {
    dlq::SharedConfig shared{std::move(config).value(), std::move(credentials).value()};
    for (const auto& [name, section] : shared.config.profiles) {
      auto merged = shared.MergedProfile(name);
      if (!merged) __builtin_trap();  // a parsed profile must be found again
      (void)merged->Get("region");
      (void)merged->GetSub("s3", "addressing_style");
    }
  }
  return 0;
}
