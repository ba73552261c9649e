// The flags and renderings the commands share for causes (issue 40): why
// archived messages failed, from their consumers' logs (causes/explain.h),
// kept in the archive's causes sidecar (causes/sidecar.h).
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "causes/cause_record.h"
#include "causes/consumers.h"
#include "causes/explain.h"
#include "common/status.h"

namespace CLI {  // NOLINT(readability-identifier-naming): CLI11's namespace
class App;
}  // namespace CLI

namespace dlq {

struct CauseFlags {
  bool look_up = false;                   // --causes: look up the causes the sidecar lacks
  std::vector<std::string> logs;          // --logs GROUP (repeatable; implies --causes)
  size_t samples = kDefaultCauseSamples;  // --cause-samples N: messages looked up per group
  int max_calls = 200;                    // --cause-max-calls N: FilterLogEvents calls per run
  bool enabled() const { return look_up || !logs.empty(); }
  std::vector<NamedLogGroup> NamedLogGroups() const;
};

// Adds --causes, --logs, --cause-samples and --cause-max-calls to `cmd`.
void AddCauseFlags(CLI::App& cmd, CauseFlags& flags);

// kInvalidArgument naming the flag.
Status ValidateCauseFlags(const CauseFlags& flags);

// The `show` section for one message: its cause (type and message, key,
// where it was logged: log group, stream, request id, time; the stack and
// the log lines around it) or the exact reason none was found, with when it
// was looked up. Terminal-safe.
void PrintCauseText(std::FILE* out, const CauseRecord* record);

}  // namespace dlq
