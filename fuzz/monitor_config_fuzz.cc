// libFuzzer target: the daemon config parser must never crash, hang, throw or
// recurse without bound, whatever the bytes; a config it accepts must yield
// drain options that pass DrainOptions::Validate().
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "aws/environment.h"
#include "monitor/config.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const dlq::MapEnvironment env{{"WEBHOOK_TOKEN", "t"}, {"BUCKET", "b"}};
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = dlq::ParseMonitorConfig(text, "fuzz.yaml", env);
  if (config.ok()) {
    if (config->groups.empty()) __builtin_trap();  // a valid config has a group
    for (const dlq::GroupConfig& g : config->groups) {
      if (!g.ToDrainOptions().Validate().ok()) __builtin_trap();
    }
  } else if (config.status().message().empty()) {
    __builtin_trap();  // every rejection says why
  }
  return 0;
}
