#include "replay/redrive_journal.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/file_util.h"
#include "common/strings.h"
#include "common/time_util.h"

namespace dlq {
namespace {

constexpr std::string_view kHeader = "dlq-redrive-journal 1";

std::string Field(std::string_view s) {
  if (s.empty()) return "-";
  std::string out(s);
  for (char& c : out) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) c = '_';
  }
  return out;
}

Status LineError(size_t line, std::string_view why) {
  return InvalidArgument(fmt::format("redrive journal line {}: {}", line, why));
}

Result<SystemTime> ParseTime(std::string_view s, size_t line) {
  std::optional<int64_t> ms = ParseInt64(s);
  // Up to the year 2255: later would overflow the clock's nanoseconds.
  if (!ms || *ms < 0 || *ms > int64_t{9000000000000}) return LineError(line, "bad time");
  return FromUnixMillis(*ms);
}

Status ParseRecord(const std::vector<std::string_view>& f, size_t line, RedriveJournal& j) {
  for (std::string_view field : f) {
    if (field.empty()) return LineError(line, "empty field");
    if (Field(field) != field) return LineError(line, "control character in a field");
  }
  if (f[0] == "sent" && f.size() == 5) {
    DLQ_ASSIGN_OR_RETURN(SystemTime at, ParseTime(f[1], line));
    j.sent.push_back({{std::string(f[2]), std::string(f[3]), std::string(f[4])}, at});
    return Status::Ok();
  }
  if (f[0] == "phase" && f.size() == 4) {
    DLQ_ASSIGN_OR_RETURN(SystemTime at, ParseTime(f[1], line));
    std::optional<RedrivePhase> phase = ParseRedrivePhase(f[2]);
    if (!phase) return LineError(line, fmt::format("unknown phase \"{}\"", Field(f[2].substr(0, 40))));
    std::optional<int64_t> step = ParseInt64(f[3]);
    if (!step || *step < 0 || *step > 1000000) return LineError(line, "bad step");
    j.phases.push_back({*phase, static_cast<int>(*step), at});
    return Status::Ok();
  }
  if (f[0] == "refailed" && f.size() == 6) {
    DLQ_ASSIGN_OR_RETURN(SystemTime at, ParseTime(f[1], line));
    j.refailed.push_back({std::string(f[2]), std::string(f[3]), std::string(f[4]), std::string(f[5]), at});
    return Status::Ok();
  }
  return LineError(line, fmt::format("not a record: \"{}\"", Field(f[0].substr(0, 40))));
}

}  // namespace

Result<RedriveJournal> ParseRedriveJournal(std::string_view text) {
  RedriveJournal j;
  size_t pos = 0, line = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) break;  // torn by a crash: ignored
    ++line;
    std::string_view l = text.substr(pos, end - pos);
    if (line == 1) {
      if (l != kHeader) return LineError(1, fmt::format("not a redrive journal (expected \"{}\")", kHeader));
    } else {
      DLQ_RETURN_IF_ERROR(ParseRecord(Split(l, ' '), line, j));
    }
    pos = end + 1;
  }
  j.valid_bytes = pos;
  return j;
}

Result<std::optional<RedriveJournal>> LoadRedriveJournal(const std::string& path) {
  auto text = ReadFileAtMost(path, kMaxRedriveJournalBytes, "redrive journal");
  if (!text.ok() && text.status().code() == ErrorCode::kNotFound) return std::optional<RedriveJournal>();
  if (!text.ok()) return text.status();
  auto parsed = ParseRedriveJournal(*text);
  if (!parsed.ok()) return parsed.status().WithContext(fmt::format("redrive journal {}", path));
  return std::optional<RedriveJournal>(std::move(parsed).value());
}

std::string JournalHeaderLine() {
  return fmt::format("{}\n", kHeader);
}

std::string JournalSentLine(const ReplayedMessage& m, SystemTime at) {
  return fmt::format("sent {} {} {} {}\n", ToUnixMillis(at), Field(m.message_id), Field(m.new_message_id),
                     Field(m.destination));
}

std::string JournalPhaseLine(RedrivePhase phase, int step, SystemTime at) {
  return fmt::format("phase {} {} {}\n", ToUnixMillis(at), RedrivePhaseName(phase), step);
}

std::string JournalRefailedLine(const RefailedMessage& m) {
  return fmt::format("refailed {} {} {} {} {}\n", ToUnixMillis(m.found_at), Field(m.message_id),
                     Field(m.new_message_id), Field(m.destination), Field(m.dlq));
}

std::string SerializeRedriveJournal(const RedriveJournal& journal) {
  std::string out = JournalHeaderLine();
  for (const JournalSent& s : journal.sent) out += JournalSentLine(s.message, s.at);
  for (const JournalPhase& p : journal.phases) out += JournalPhaseLine(p.phase, p.step, p.at);
  for (const RefailedMessage& r : journal.refailed) out += JournalRefailedLine(r);
  return out;
}

RedriveJournalWriter::~RedriveJournalWriter() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::unique_ptr<RedriveJournalWriter>> RedriveJournalWriter::Open(const std::string& path, mode_t mode,
                                                                         size_t valid_bytes) {
  auto fail = [&](std::string_view step) {
    return InvalidArgument(fmt::format("{} redrive journal {}: {}", step, path, std::strerror(errno)));
  };
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_CLOEXEC, mode);
  if (fd < 0) return fail("open");
  std::unique_ptr<RedriveJournalWriter> w(new RedriveJournalWriter(path, fd));
  struct stat st {};
  if (::fstat(fd, &st) != 0) return fail("stat");
  if (static_cast<size_t>(st.st_size) > valid_bytes && ::ftruncate(fd, static_cast<off_t>(valid_bytes)) != 0) {
    return fail("truncate");
  }
  if (valid_bytes == 0) DLQ_RETURN_IF_ERROR(w->Append(JournalHeaderLine()));
  return w;
}

Status RedriveJournalWriter::Append(std::string_view lines) {
  while (!lines.empty()) {
    ssize_t n = ::write(fd_, lines.data(), lines.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return InvalidArgument(fmt::format("write redrive journal {}: {}", path_, std::strerror(errno)));
    lines.remove_prefix(static_cast<size_t>(n));
  }
  if (::fsync(fd_) != 0)
    return InvalidArgument(fmt::format("fsync redrive journal {}: {}", path_, std::strerror(errno)));
  return Status::Ok();
}

RedriveResumePoint ResumePointOf(const RedriveJournal& journal, const RedriveSteps& steps) {
  RedriveResumePoint point;
  for (size_t i = 0; i + 1 < journal.phases.size(); ++i) {
    if (journal.phases[i].phase == RedrivePhase::kPaused) {
      point.paused_for +=
          std::chrono::duration_cast<std::chrono::milliseconds>(journal.phases[i + 1].at - journal.phases[i].at);
    }
  }
  const JournalPhase& last = journal.phases.back();
  point.step = std::min<size_t>(static_cast<size_t>(last.step), steps.last());
  switch (last.phase) {
    case RedrivePhase::kCanary:
    case RedrivePhase::kRamp:
    case RedrivePhase::kSending:
    case RedrivePhase::kPaused: point.phase = steps.SendingPhase(point.step); break;
    case RedrivePhase::kWaiting:
    case RedrivePhase::kFinalCheck:
      point.phase = last.phase;
      point.wait_start = last.at;
      break;
    case RedrivePhase::kDone:
    case RedrivePhase::kStopped: point.phase = last.phase; break;
  }
  return point;
}

}  // namespace dlq
