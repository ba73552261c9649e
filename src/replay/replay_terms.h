// How the caller names the knobs of a replay, for the messages of the
// library's refusals ("...; use --to-queue"). replay/ knows no command line:
// the CLI passes its flags (CliReplayTerms, app/replay_command.cc), the
// dashboard the defaults, which describe each knob in words.
#pragma once

#include <string>

namespace dlq {

struct ReplayTerms {
  std::string to_source = "sending each message to its source";
  std::string to_queue = "one named destination queue";
  std::string narrow = "the queue or attribute filters";  // "filter with {narrow} to one source"
  std::string queue_filter = "the queue filter";          // "narrow it with {queue_filter}"
  std::string all_queues = "the option that sends several DLQs into one queue";
  std::string allow_cross_account = "allowing cross-account destinations";
  std::string no_canary = "no canary";
  std::string max_backlog = "a backlog bound";
  std::string checkpoint = "checkpoint";  // "use another {checkpoint} file"
  std::string transform = "the transform";
  std::string failed_again = "selecting the messages that failed again";
  std::string audit_to = "an audit location";
  std::string to_origin = "sending each message back where it came from";
  std::string function = "the function field";  // "name it with {function}" (the dashboard's field)
};

}  // namespace dlq
