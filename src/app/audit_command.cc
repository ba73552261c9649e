#include "app/audit_command.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <optional>
#include <vector>

#include "app/archive_source.h"
#include "app/command.h"
#include "common/json_writer.h"
#include "common/text.h"
#include "common/time_util.h"
#include "replay/audit.h"

namespace dlq {
namespace {

constexpr int kExitFailure = 1, kExitSkipped = 3, kExitInterrupted = 130;

std::string AuditDir(const Destination& from) {
  const std::string prefix = ArchivePrefix(from);
  return (prefix.empty() ? "" : prefix + "/") + "_audit/";
}

// The record keys directly under _audit/ (the ledger's subdirectories are not records), oldest first.
Result<std::vector<std::string>> RecordKeys(ObjectStore& store, const Destination& from,
                                            const std::atomic<bool>* stop) {
  std::vector<std::string> keys;
  std::string token;
  do {
    if (stop != nullptr && stop->load()) return Cancelled("audit: stopped by a signal");
    DLQ_ASSIGN_OR_RETURN(ListPage page, store.List(AuditDir(from), "/", token));
    for (ObjectInfo& o : page.objects) {
      if (o.key.ends_with(".json")) keys.push_back(std::move(o.key));
    }
    token = page.next_token;
  } while (!token.empty());
  std::sort(keys.begin(), keys.end());
  return keys;
}

void Error(std::FILE* err, const std::string& message) {
  std::fprintf(err, "error: audit: %s\n", TerminalSafe(message).c_str());
}

std::string Counts(const AuditRecord& r) {
  if (r.kind == "archive") {
    const ArchiveAuditCounts& a = r.archive;
    return fmt::format("received {}, archived {}, deleted {}, released {}, delete failures {}", a.received, a.archived,
                       a.deleted, a.released, a.delete_failures);
  }
  // Every selected message in one bucket; the not-sent ones are where the run read them.
  const bool from_archive = r.source.starts_with("s3://") || r.source.starts_with("file://");
  return BucketsText(BucketsOf(r), /*dry_run=*/false, /*show_resumed=*/false, from_archive ? "the archive" : "the DLQ");
}

void CountsJson(JsonWriter& w, const AuditRecord& r) {
  w.Key("counts").BeginObject();
  if (r.kind == "archive") {
    const ArchiveAuditCounts& a = r.archive;
    w.Key("received").Uint(a.received).Key("archived").Uint(a.archived).Key("deleted").Uint(a.deleted);
    w.Key("released").Uint(a.released).Key("delete_failures").Uint(a.delete_failures);
  } else {
    const ReplayStats& s = r.stats;
    w.Key("selected").Uint(s.accepted).Key("sent").Uint(s.sent).Key("failed").Uint(s.failed);
    w.Key("already_replayed").Uint(s.already_replayed).Key("resumed").Uint(s.resumed);
  }
  w.EndObject();
  if (r.kind != "archive") {
    w.Key("buckets");
    WriteBucketsJson(w, BucketsOf(r));
  }
}

void PrintJson(std::FILE* out, std::string json) {
  EscapeJsonForTerminal(json);
  std::fprintf(out, "%s\n", json.c_str());
}

}  // namespace

int RunAuditLsCommand(const AuditCommandOptions& options, ObjectStore& store, const Destination& from, std::FILE* out,
                      std::FILE* err, const std::atomic<bool>* stop) {
  auto keys = RecordKeys(store, from, stop);
  if (!keys.ok()) {
    if (keys.status().code() == ErrorCode::kCancelled) return kExitInterrupted;
    Error(err, keys.status().WithContext(fmt::format("listing {}/{}", store.Describe(), AuditDir(from))).message());
    return kExitFailure;
  }
  // Parsed first, then ordered by finish time (keys order by second only);
  // the per-message lists are dropped at once, so memory stays per record.
  std::vector<std::pair<std::string, AuditRecord>> records;     // key, record
  std::vector<std::pair<std::string, std::string>> unreadable;  // key, why
  for (const std::string& key : *keys) {
    if (stop != nullptr && stop->load()) return kExitInterrupted;
    auto data = GetAtMost(store, key, kMaxAuditRecordBytes, "audit record");
    if (!data.ok() && data.status().code() == ErrorCode::kFailedPrecondition) {
      unreadable.emplace_back(key, data.status().message());  // too large to read
      continue;
    }
    if (!data.ok()) {
      Error(err, data.status().WithContext(fmt::format("reading {}/{}", store.Describe(), key)).message());
      return kExitFailure;
    }
    auto r = ParseAuditRecord(*data);
    if (!r.ok()) {
      unreadable.emplace_back(key, r.status().message());
      continue;
    }
    r->buckets = BucketsOf(*r);  // before the lists it may be derived from go
    r->sent.clear();
    r->failures.clear();
    r->failed_again.clear();
    records.emplace_back(key, std::move(*r));
  }
  std::stable_sort(records.begin(), records.end(),
                   [](const auto& a, const auto& b) { return a.second.finished_at < b.second.finished_at; });
  const bool json = options.output == "json";
  JsonWriter w;
  w.BeginObject().Key("records").BeginArray();
  if (!json)
    std::fprintf(out, "%-33s %-24s %-7s %-7s %s\n", "ID", "FINISHED", "KIND", "OUTCOME", "COUNTS -> TO; CALLER");
  for (const auto& [key, r] : records) {
    const std::string id = AuditIdOfKey(key);
    if (json) {
      w.BeginObject().Key("id").String(id).Key("key").String(key).Key("kind").String(r.kind);
      w.Key("started_at").String(FormatIso8601(r.started_at)).Key("finished_at").String(FormatIso8601(r.finished_at));
      w.Key("caller_arn")
          .OptionalString(r.caller_arn.empty() ? std::nullopt : std::optional<std::string_view>(r.caller_arn));
      w.Key("source").String(r.source).Key("filter").String(r.filter).Key("destination").String(r.destination);
      w.Key("outcome").String(r.outcome);
      CountsJson(w, r);
      w.EndObject();
    } else {
      std::fprintf(out, "%-33s %-24s %-7s %-7s %s -> %s; by %s\n", TerminalSafe(id).c_str(),
                   FormatIso8601(r.finished_at).c_str(), TerminalSafe(r.kind).c_str(), TerminalSafe(r.outcome).c_str(),
                   Counts(r).c_str(), TerminalSafe(r.destination).c_str(),
                   r.caller_arn.empty() ? "(unknown caller)" : TerminalSafe(r.caller_arn).c_str());
    }
  }
  w.EndArray().Key("unreadable").BeginArray();
  for (const auto& [key, why] : unreadable) w.BeginObject().Key("key").String(key).Key("error").String(why).EndObject();
  w.EndArray().EndObject();
  if (json) {
    PrintJson(out, w.Take());
  } else {
    const size_t n = records.size();
    std::fprintf(out, "%zu audit record%s in %s\n", n, n == 1 ? "" : "s",
                 TerminalSafe(store.Describe() + "/" + AuditDir(from)).c_str());
  }
  for (const auto& [key, why] : unreadable) {
    std::fprintf(err, "warning: %s: left out: %s\n", TerminalSafe(key).c_str(), TerminalSafe(why).c_str());
  }
  return unreadable.empty() ? 0 : kExitSkipped;
}

int RunAuditShowCommand(const AuditCommandOptions& options, ObjectStore& store, const Destination& from, std::FILE* out,
                        std::FILE* err) {
  auto keys = RecordKeys(store, from, nullptr);
  if (!keys.ok()) {
    Error(err, keys.status().WithContext(fmt::format("listing {}/{}", store.Describe(), AuditDir(from))).message());
    return kExitFailure;
  }
  std::vector<std::string> matches;
  for (const std::string& key : *keys) {
    const std::string id = AuditIdOfKey(key);
    if (id == options.id || (options.id.size() == 16 && id.ends_with("-" + options.id))) matches.push_back(key);
  }
  if (matches.size() != 1) {
    Error(err, matches.empty() ? fmt::format("no audit record {} in {}/{} (see `dlq-archive audit ls`)", options.id,
                                             store.Describe(), AuditDir(from))
                               : fmt::format("{} names {} records; give the whole id", options.id, matches.size()));
    return kExitFailure;
  }
  const std::string& key = matches.front();
  auto data = GetAtMost(store, key, kMaxAuditRecordBytes, "audit record");
  if (!data.ok() && data.status().code() == ErrorCode::kFailedPrecondition) {
    Error(err, data.status().message());
    return kExitFailure;
  }
  if (!data.ok()) {
    Error(err, data.status().WithContext(fmt::format("reading {}/{}", store.Describe(), key)).message());
    return kExitFailure;
  }
  auto r = ParseAuditRecord(*data);
  if (!r.ok()) {
    Error(err, r.status().WithContext(fmt::format("{}/{}", store.Describe(), key)).message());
    return kExitFailure;
  }
  if (options.output == "json") {
    if (r->kind != "archive") r->buckets = BucketsOf(*r);
    std::string json = AuditJson(*r);
    json.pop_back();  // PrintJson ends the line
    PrintJson(out, std::move(json));
    return 0;
  }
  auto line = [&](const char* label, const std::string& value) {
    std::fprintf(out, "%-13s %s\n", label, TerminalSafe(value).c_str());
  };
  line("id:", AuditIdOfKey(key));
  line("stored in:", store.Describe() + "/" + key);
  line("kind:", r->kind);
  line("caller:", r->caller_arn.empty() ? "(unknown: " + r->caller_error + ")" : r->caller_arn);
  line("started:", FormatIso8601(r->started_at));
  line("finished:", FormatIso8601(r->finished_at));
  line("source:", r->source);
  line("filter:", r->filter);
  line("destination:", r->destination);
  line("transform:", r->transform.empty() ? "(none)" : r->transform);
  if (r->kind == "replay") line("again:", r->again ? "yes (earlier deliveries were sent again)" : "no");
  line("outcome:", r->outcome);
  line("counts:", Counts(*r));
  for (const auto& [url, n] : r->sent_by_destination) line("sent to:", fmt::format("{}: {}", url, n));
  if (r->kind != "replay") return 0;
  std::fprintf(out, "messages (%zu):\n", r->sent.size() + r->failures.size());
  for (const ReplayedMessage& m : r->sent) {
    std::fprintf(out, "  sent    %s -> %s  %s\n", TerminalSafe(m.message_id).c_str(),
                 m.new_message_id.empty() ? "(new id not recorded)" : TerminalSafe(m.new_message_id).c_str(),
                 TerminalSafe(m.destination).c_str());
  }
  for (const ReplayFailure& f : r->failures) {
    std::fprintf(out, "  failed  %s  %s: %s\n", TerminalSafe(f.message_id).c_str(),
                 f.destination.empty() ? "(unresolved)" : TerminalSafe(f.destination).c_str(),
                 TerminalSafe(f.reason).c_str());
  }
  for (const FailedAgainMessage& f : r->failed_again) {
    std::fprintf(out, "  failed again  %s -> %s  in %s at %s\n", TerminalSafe(f.message_id).c_str(),
                 TerminalSafe(f.new_message_id).c_str(), TerminalSafe(f.dlq).c_str(),
                 FormatIso8601(f.found_at).c_str());
  }
  return 0;
}

namespace {

struct AuditFlags {
  AuditCommandOptions options;
  std::string from;
  CLI::App* ls = nullptr;
  CLI::App* show = nullptr;
};

Runner AddAuditFlags(CLI::App& cmd) {
  auto f = std::make_shared<AuditFlags>();
  cmd.require_subcommand(1);
  f->ls = cmd.add_subcommand("ls", "one line per audit record, oldest first");
  f->show = cmd.add_subcommand("show", "one audit record in full, with every message's outcome");
  f->show->add_option("id", f->options.id, "the record's id, as `audit ls` prints it (required)");
  for (CLI::App* sub : {f->ls, f->show}) {
    AddFromFlag(*sub, f->from);
    sub->add_option("--output", f->options.output, "text or json")->check(CLI::IsMember({"text", "json"}));
  }
  return [f](const CommandContext& ctx) {
    if (*f->ls) {
      return WithArchive(ctx, f->from, [&](ObjectStore& store, const Destination& from) {
        return RunAuditLsCommand(f->options, store, from, stdout, stderr, &ctx.stop);
      });
    }
    if (f->options.id.empty()) return ctx.usage.Fail("name an audit record ID (see `dlq-archive audit ls`)");
    return WithArchive(ctx, f->from, [&](ObjectStore& store, const Destination& from) {
      return RunAuditShowCommand(f->options, store, from, stdout, stderr);
    });
  };
}

}  // namespace

Command AuditCommand() {
  return {"audit", "list replays (and archive runs) from the audit trail, or show one",
          "Records are read from {prefix}/_audit/ of --from (the archive, or a replay's --audit-to). Exit "
          "codes: 0 ok; 1 cannot list or read, or no such record; 2 usage error; 3 unreadable records left out",
          AddAuditFlags};
}

}  // namespace dlq
