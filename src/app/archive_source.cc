#include "app/archive_source.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>

#include "common/byte_size.h"
#include "common/count_noun.h"
#include "common/text.h"

namespace dlq {

void AddFromFlag(CLI::App& cmd, std::string& from) {
  cmd.add_option("--from", from, "s3://BUCKET/PREFIX or file:///DIR, as given to archive --to (required)");
}

void AddArchiveSourceFlags(CLI::App& cmd, ArchiveSourceFlags& flags) {
  cmd.add_option("--key-template", flags.key_templates,
                 "the key template the archive was written with, to prune by queue and date (repeatable; default: "
                 "the default and the Hive template)");
  cmd.add_option("--parallelism", flags.parallelism,
                 "objects fetched and decoded at once (0: one per core for file://, 16 for s3://)")
      ->check(CLI::Range(0, 256));
}

void AddScanMemoryFlag(CLI::App& cmd, ArchiveSourceFlags& flags) {
  cmd.add_option("--memory", flags.memory,
                 "memory the scan may reserve for objects in flight and matches awaiting output, e.g. 512MiB "
                 "(default 256MiB; the de-duplication table comes on top; see doc/querying.md)")
      ->envname("DLQ_SCAN_MEMORY");
}

Result<size_t> ParseScanMemory(const ArchiveSourceFlags& flags) {
  if (flags.memory.empty()) return ScanOptions{}.memory_budget_bytes;
  std::optional<uint64_t> bytes = ParseByteSize(flags.memory);
  if (!bytes || *bytes < (uint64_t{4} << 20) || *bytes > (uint64_t{1} << 40)) {
    return InvalidArgument(fmt::format("--memory '{}': expected a size from 4MiB to 1TiB, e.g. 512MiB", flags.memory));
  }
  return static_cast<size_t>(*bytes);
}

std::string StoppedLine(const ScanStats& stats) {
  return fmt::format("stopped by a signal after {} of {} ({} read)", stats.objects_done,
                     CountNoun(stats.objects_listed, "object", "objects"), FormatByteSize(stats.bytes));
}

Result<ArchiveLayouts> ParseLayouts(const ArchiveSourceFlags& flags) {
  ArchiveLayouts layouts;
  for (const std::string& t : flags.key_templates) {
    Result<KeyTemplate> parsed = KeyTemplate::Parse(t);
    if (!parsed.ok()) return parsed.status().WithContext("--key-template");
    layouts.templates.push_back(std::move(*parsed));
  }
  return layouts;
}

std::string KeyUriPrefix(const Destination& from) {
  return from.scheme == "s3" ? fmt::format("s3://{}/", from.bucket) : fmt::format("file://{}/", from.root);
}

std::string SkippedText(const std::vector<SkippedEntry>& skipped, const Destination& from) {
  const std::string uri = TerminalSafe(KeyUriPrefix(from));
  std::string out;
  for (const SkippedEntry& e : skipped) {
    out += fmt::format("warning: {}{}: skipped: {}\n", uri, TerminalSafe(e.path), TerminalSafe(e.reason));
  }
  return out;
}

void ReportSkipped(const std::vector<SkippedEntry>& skipped, const Destination& from, std::FILE* err) {
  std::fputs(SkippedText(skipped, from).c_str(), err);
}

int ReportDamage(const ScanStats& stats, const Destination& from, std::FILE* err) {
  // Keys and messages (which may quote a damaged line) are terminal-safe.
  const std::string uri = TerminalSafe(KeyUriPrefix(from));
  ReportSkipped(stats.skipped_entries, from, err);
  for (const ReadError& e : stats.errors) {
    if (e.line == 0) {
      fmt::print(err, "warning: {}{}: unreadable object skipped: {}\n", uri, TerminalSafe(e.key),
                 TerminalSafe(e.message));
    } else {
      fmt::print(err, "warning: {}{} line {}: {}\n", uri, TerminalSafe(e.key), e.line, TerminalSafe(e.message));
    }
  }
  const uint64_t problems = stats.skipped_lines + stats.skipped_objects;
  if (problems > stats.errors.size()) {
    fmt::print(err, "warning: {} more problems not shown\n", problems - stats.errors.size());
  }
  const bool denied = std::any_of(stats.errors.begin(), stats.errors.end(), [](const ReadError& e) {
    return e.message.find("AccessDenied") != std::string::npos;
  });
  if (denied && from.scheme == "s3") {
    fmt::print(err,
               "note: S3 refused objects with AccessDenied: reading needs s3:GetObject on arn:aws:s3:::{}/{}* (and "
               "kms:Decrypt on the key when the archive is SSE-KMS)\n",
               from.bucket, from.prefix.empty() ? "" : from.prefix + "/");
  }
  if (!stats.unrecognised_key.empty()) {
    fmt::print(err,
               "note: {}{} does not follow the default or Hive key layout, so nothing was pruned; pass "
               "--key-template to read only the partitions you ask for\n",
               uri, TerminalSafe(stats.unrecognised_key));
  }
  if (stats.complete()) return 0;
  fmt::print(err, "warning: incomplete: {} and {} were skipped{}\n",
             CountNoun(stats.skipped_objects, "unreadable object", "unreadable objects"),
             CountNoun(stats.skipped_lines, "unreadable line", "unreadable lines"),
             stats.skipped_entries.empty() ? ""
                                           : fmt::format(", and {} of the archive directory {} not read",
                                                         CountNoun(stats.skipped_entries.size(), "entry", "entries"),
                                                         stats.skipped_entries.size() == 1 ? "was" : "were"));
  return 3;
}

}  // namespace dlq
