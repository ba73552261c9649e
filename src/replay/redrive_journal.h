// The resume journal of a guarded redrive (FILE.guard next to the replay
// checkpoint FILE; doc/replay.md "Guarded redrive"). Text, one record per
// line, fields separated by one space:
//
//   dlq-redrive-journal 1
//   sent <unix ms> <message id> <new message id> <destination URL>
//   phase <unix ms> <phase name> <step>
//   refailed <unix ms> <message id> <new message id> <destination URL> <DLQ URL>
//
// The first line is the header. A record is written with its newline in one
// append; a last line without its newline is a write torn by a crash and is
// ignored (the writer cuts it off before appending). Fields are never empty
// and hold no whitespace (SQS ids and queue URLs have none).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/status.h"
#include "replay/redrive_guard.h"
#include "replay/redrive_steps.h"
#include "replay/replayer.h"

namespace dlq {

struct JournalSent {
  ReplayedMessage message;
  SystemTime at;
};
struct JournalPhase {
  RedrivePhase phase = RedrivePhase::kCanary;
  int step = 0;
  SystemTime at;
};

struct RedriveJournal {
  std::vector<JournalSent> sent;  // in file order
  std::vector<JournalPhase> phases;
  std::vector<RefailedMessage> refailed;  // found_at is the record's time
  size_t valid_bytes = 0;                 // the length up to the last complete line
};

// Where a guard resumes the run a journal records: the phase it re-enters
// (a sending phase for one that was sending or paused: the backlog is sampled
// again before the next item), its step, the start of the wait it was in
// (waiting or the final check) and the time it was paused for backlog.
struct RedriveResumePoint {
  RedrivePhase phase = RedrivePhase::kCanary;
  size_t step = 0;
  std::optional<SystemTime> wait_start;
  std::chrono::milliseconds paused_for{0};
};
// `journal` must have at least one phase record.
RedriveResumePoint ResumePointOf(const RedriveJournal& journal, const RedriveSteps& steps);

// kInvalidArgument naming the line for anything but a header followed by
// well-formed records (a torn last line excepted). Empty text: an empty journal.
Result<RedriveJournal> ParseRedriveJournal(std::string_view text);

// The largest journal read (the bound of audit records, 256 MiB: about
// 1,700,000 "sent" lines): a larger one is refused, named, without being read.
inline constexpr uint64_t kMaxRedriveJournalBytes = uint64_t{256} << 20;

// The journal at `path`; nullopt when there is none. kInvalidArgument naming
// the path when it cannot be read or parsed, or is larger than
// kMaxRedriveJournalBytes.
Result<std::optional<RedriveJournal>> LoadRedriveJournal(const std::string& path);

std::string JournalHeaderLine();
// One record each, newline included. Empty fields are written as "-" and
// whitespace in a field as '_' (ids and URLs have neither).
std::string JournalSentLine(const ReplayedMessage& m, SystemTime at);
std::string JournalPhaseLine(RedrivePhase phase, int step, SystemTime at);
std::string JournalRefailedLine(const RefailedMessage& m);
// The journal as lines (header included): what ParseRedriveJournal reads back.
std::string SerializeRedriveJournal(const RedriveJournal& journal);

// Appends records to a journal file; each Append is one write and an fsync.
// Not thread-safe.
class RedriveJournalWriter {
 public:
  ~RedriveJournalWriter();
  // Opens (creating with `mode`) `path` for appending, cuts it to
  // `valid_bytes` (a torn tail), and writes the header when it is empty. A
  // symbolic link at `path` is refused, not followed.
  static Result<std::unique_ptr<RedriveJournalWriter>> Open(const std::string& path, mode_t mode, size_t valid_bytes);
  Status Append(std::string_view lines);

 private:
  RedriveJournalWriter(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace dlq
