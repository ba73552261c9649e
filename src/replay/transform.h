// Record transforms for `replay --transform CMD` (edit and resend).
//
// CommandTransform runs `sh -c CMD` once, as a long-lived filter: each record
// is written to its stdin as one archive JSON line (doc/archive-format.md) and
// one line is read back from its stdout, which must parse as an archive
// record with the same message_id. So the command must answer every line
// before reading the next and must not buffer its output (`jq -c --unbuffered`,
// `python3 -u`, `sed -u`). A line that is not such a record, no answer within
// the timeout, or the command exiting is an error: the replay stops and sends
// nothing more. Not thread-safe. Writing to a command that exited must not
// kill the process, so Start ignores SIGPIPE process-wide.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <string>

#include "archive/record.h"
#include "common/status.h"

namespace dlq {

class RecordTransform {
 public:
  virtual ~RecordTransform() = default;
  // The record to send in place of `record`. Any error is final.
  virtual Result<ArchiveRecord> Apply(const ArchiveRecord& record) = 0;
};

class CommandTransform final : public RecordTransform {
 public:
  // kInvalidArgument when the command cannot be started. Errors name the
  // transform `name` (the CLI: "--transform").
  static Result<std::unique_ptr<CommandTransform>> Start(const std::string& command, std::chrono::milliseconds timeout,
                                                         const std::string& name = "the transform");
  // Closes the command's stdin and waits for it (killing it after the timeout).
  ~CommandTransform() override;
  CommandTransform(const CommandTransform&) = delete;
  CommandTransform& operator=(const CommandTransform&) = delete;

  Result<ArchiveRecord> Apply(const ArchiveRecord& record) override;

 private:
  CommandTransform(std::string command, std::string name, std::chrono::milliseconds timeout, pid_t pid, int in_fd,
                   int out_fd);
  Status Fail(const std::string& what);
  std::string ExitDescription();

  std::string command_;
  std::string name_;
  std::chrono::milliseconds timeout_;
  pid_t pid_;
  int in_fd_;            // the command's stdin (we write)
  int out_fd_;           // the command's stdout (we read)
  std::string pending_;  // bytes read past the last line
  bool failed_ = false;
  bool reaped_ = false;
  int wait_status_ = 0;
};

}  // namespace dlq
