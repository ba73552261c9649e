// ProgressPrinter: how a long command (archive, replay) shows its progress on
// stderr. On a terminal, one line redrawn in place through the logger (so log
// lines never break it), at most every 200 ms. Anywhere else (a file, a pipe,
// a CI log) a plain line, no carriage return and no escape codes, at a steady
// interval (10 s by default) and at once when forced (a phase change), so a
// run that waits for minutes still says what it is doing.
// Not thread-safe: one thread calls it. The clock and the stream must outlive it.
#pragma once

#include <cstdio>
#include <optional>
#include <string>
#include <string_view>

#include "common/clock.h"

namespace dlq {

enum class ProgressMode { kOff, kTerminal, kPlain };

// `flag` is --progress: "never" is off; "always" the terminal line whatever
// stderr is; "auto" the terminal line on a terminal, else plain lines.
ProgressMode ChooseProgressMode(std::string_view flag, bool stderr_is_tty);

class ProgressPrinter {
 public:
  ProgressPrinter(ProgressMode mode, Clock& clock, std::FILE* err, Duration plain_every = std::chrono::seconds(10));
  ~ProgressPrinter();
  ProgressPrinter(const ProgressPrinter&) = delete;
  ProgressPrinter& operator=(const ProgressPrinter&) = delete;

  bool enabled() const { return mode_ != ProgressMode::kOff; }
  // Shows `line` now when `force`, or when the mode's interval has passed
  // since the last line shown; else keeps it for later.
  void Show(std::string_view line, bool force = false);
  // Takes the terminal line away (before a summary is printed); plain lines stay.
  void Clear();

 private:
  ProgressMode mode_;
  Clock& clock_;
  std::FILE* err_;
  Duration every_;
  std::optional<SteadyTime> last_;
};

}  // namespace dlq
