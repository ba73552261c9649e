#include "common/progress.h"

#include "common/log.h"
#include "common/text.h"

namespace dlq {

ProgressMode ChooseProgressMode(std::string_view flag, bool stderr_is_tty) {
  if (flag == "never") return ProgressMode::kOff;
  if (flag == "always" || stderr_is_tty) return ProgressMode::kTerminal;
  return ProgressMode::kPlain;
}

ProgressPrinter::ProgressPrinter(ProgressMode mode, Clock& clock, std::FILE* err, Duration plain_every)
    : mode_(mode),
      clock_(clock),
      err_(err),
      every_(mode == ProgressMode::kTerminal ? Duration(std::chrono::milliseconds(200)) : plain_every) {}

ProgressPrinter::~ProgressPrinter() {
  Clear();
}

void ProgressPrinter::Show(std::string_view line, bool force) {
  if (mode_ == ProgressMode::kOff) return;
  const SteadyTime now = clock_.SteadyNow();
  if (!force && last_ && now - *last_ < every_) return;
  last_ = now;
  if (mode_ == ProgressMode::kTerminal) {
    Log().SetStatusLine(line);
    return;
  }
  const std::string safe = TerminalSafe(line);
  std::fprintf(err_, "%s\n", safe.c_str());
  std::fflush(err_);
}

void ProgressPrinter::Clear() {
  if (mode_ == ProgressMode::kTerminal) Log().SetStatusLine("");
}

}  // namespace dlq
