// How a replay run (replay/replay_run.h) reads on the command line and in the
// dashboard's job output: the notes and dry-run lines while it goes
// (ReplayTextObserver), then the summary as text or as the `--output json`
// document, and the exit code (doc/replay.md). Text goes through a TextSink:
// the CLI's writes to stdout and stderr as it comes, the dashboard's collects.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "common/clock.h"
#include "common/progress.h"
#include "replay/replay_run.h"

namespace dlq {

struct TextSink {
  std::function<void(std::string_view)> out;  // stdout: notes, the summary (or the JSON document)
  std::function<void(std::string_view)> err;  // stderr: warnings, failures, errors
  static TextSink ToFiles(std::FILE* out, std::FILE* err);
};

// How the summary is rendered.
struct ReplayRendering {
  bool json = false;            // --output json: notes go to err, stdout holds only the document
  bool list_would_send = true;  // a dry run lists each message it would send (the dashboard counts them instead)
  bool all = false;             // --all was given (a dry run's note says when the real run needs it)
  bool all_queues = false;      // --all-queues was given
  bool checkpoint = false;      // a checkpoint was given (the summary counts resumed messages)
  std::string to_queue;         // --to-queue as given
  std::string audit_to;         // --audit-to as given (the live form's "archives them" hint)
};

// Renders what a run reports while it goes. `progress` may be null (no
// progress line); it is cleared before the summary.
class ReplayTextObserver final : public ReplayObserver {
 public:
  ReplayTextObserver(const ReplayRunRequest& request, const ReplayRendering& rendering, TextSink sink,
                     std::unique_ptr<ProgressPrinter> progress, Clock& clock);
  ~ReplayTextObserver() override;

  void Warning(const std::string& text) override;
  void SelectionChecked(const DlqCounts& by_dlq, const std::vector<std::string>& routes) override;
  void GuardPlanned(const GuardedRedrive& guard) override;
  void DryRun(const DryRunEntry& entry) override;
  void Progress(const ReplayStats& stats) override;
  void Guard(const RedriveStatus& status) override;
  // Takes the progress line away (before the summary).
  void ClearProgress();
  // Called with each status its guard reports, besides the progress line; may be empty.
  std::function<void(const RedriveStatus&)> on_guard;

 private:
  class ProgressLine;
  const ReplayRunRequest& request_;
  ReplayRendering rendering_;
  TextSink sink_;
  std::unique_ptr<ProgressLine> progress_;
};

// The exit code of a run's end (doc/replay.md): 0, 1, 2, 3, 4, 5 or 130.
int ReplayExitCode(ReplayEnd end);

// Renders a finished run: a refused run's error; else the failures, the
// summary (text, or the JSON document), the guard's breach and the error that
// stopped it. Returns the exit code.
int RenderReplayResult(const ReplayRendering& rendering, const ReplayRunResult& result, const TextSink& sink);

// The run as one JSON document (doc/replay.md "--output json"), newline-ended.
std::string ReplayResultJson(const ReplayRunResult& result, int exit_code);

// "error: replay: MESSAGE\n" (terminal-safe), as a refusal reads.
std::string ReplayErrorLine(std::string_view message);

}  // namespace dlq
