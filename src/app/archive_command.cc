#include "app/archive_command.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <thread>

#include "common/log.h"
#include "common/time_util.h"

namespace dlq {
namespace {

std::string HumanBytes(uint64_t b) {
  if (b < 1024) return fmt::format("{} B", b);
  if (b < (1u << 20)) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.1f} MiB", b / 1048576.0);
}

void AppendResultJson(std::string& out, const DrainResult& r, const std::string& dest_prefix) {
  const DrainStats& s = r.stats;
  out += fmt::format(
      "{{\"queue\":\"{}\",\"queue_url\":\"{}\",\"received\":{},\"selected\":{},\"skipped\":{},\"archived\":{},"
      "\"deleted\":{},\"duplicates\":{},\"delete_failures\":{},\"released\":{},\"objects\":{},\"bytes\":{},"
      "\"drained\":{},\"stopped\":{},\"elapsed_ms\":{},\"error\":",
      r.queue.name, r.queue.url, s.received, s.selected, s.skipped, s.archived, s.deleted, s.duplicates,
      s.delete_failures, s.released, s.objects, s.bytes_uploaded, r.drained, r.stopped, r.elapsed.count());
  if (r.status.ok()) {
    out += "null";
  } else {
    AppendJsonString(out, r.status.ToString());
  }
  out += ",\"objects_written\":[";
  for (size_t i = 0; i < r.keys.size(); ++i) {
    if (i) out += ',';
    AppendJsonString(out, dest_prefix + r.keys[i]);
  }
  out += "]}";
}

}  // namespace

int RunArchiveCommand(ArchiveCommandOptions options, AwsServices& services, std::atomic<bool>& stop) {
  // Validate everything before touching any queue.
  if (options.queues.empty() && options.queue_prefix.empty()) {
    std::fprintf(stderr, "error: name at least one --queue or a --queue-prefix\n");
    return 2;
  }
  if (options.output != "text" && options.output != "json") {
    std::fprintf(stderr, "error: --output must be text or json\n");
    return 2;
  }
  auto dest = ParseDestination(options.destination);
  if (!dest.ok()) {
    std::fprintf(stderr, "error: %s\n", dest.status().message().c_str());
    return 2;
  }
  if (!dest->prefix.empty()) options.drain.prefix = dest->prefix;
  std::string tmpl = options.key_template.empty()
                         ? std::string(options.hive ? kHiveKeyTemplate : kDefaultKeyTemplate)
                         : options.key_template;
  auto parsed = KeyTemplate::Parse(tmpl);
  if (!parsed.ok()) {
    std::fprintf(stderr, "error: --key-template: %s\n", parsed.status().message().c_str());
    return 2;
  }
  options.drain.key_template = *parsed;
  if (Status st = options.drain.Validate(); !st.ok()) {
    std::fprintf(stderr, "error: %s\n", st.message().c_str());
    return 2;
  }
  auto store = OpenStore(*dest, &services);
  if (!store.ok()) {
    std::fprintf(stderr, "error: destination %s: %s\n", options.destination.c_str(),
                 store.status().ToString().c_str());
    return 1;
  }
  std::string uri_prefix = dest->scheme == "s3" ? fmt::format("s3://{}/", dest->bucket)
                                                : fmt::format("file://{}/", dest->root);

  // Resolve the queues.
  std::vector<std::string> names = options.queues;
  if (!options.queue_prefix.empty()) {
    auto urls = services.sqs().ListQueues(options.queue_prefix);
    if (!urls.ok()) {
      std::fprintf(stderr, "error: list queues with prefix '%s': %s\n", options.queue_prefix.c_str(),
                   urls.status().ToString().c_str());
      return 1;
    }
    if (urls->empty()) {
      std::fprintf(stderr, "error: no queue name starts with '%s'\n", options.queue_prefix.c_str());
      return 1;
    }
    names.insert(names.end(), urls->begin(), urls->end());
  }
  std::vector<QueueInfo> queues;
  for (const auto& n : names) {
    auto q = ResolveQueue(services.sqs(), n, services.settings().region);
    if (!q.ok()) {
      std::fprintf(stderr, "error: %s\n", q.status().ToString().c_str());
      return 1;
    }
    queues.push_back(*q);
  }

  bool tty = isatty(STDERR_FILENO) != 0;
  bool show_progress = options.progress == "always" || (options.progress == "auto" && tty);
  std::vector<DrainResult> results;
  std::string host = LocalHostName();
  for (const QueueInfo& q : queues) {
    if (stop) break;
    ArchiveContext ctx;
    ctx.queue = q.name;
    ctx.queue_url = q.url;
    ctx.region = q.region;
    ctx.account_id = q.account_id;
    ctx.archiver_version = DLQ_VERSION;
    ctx.host = host;
    ctx.fifo = q.fifo;
    ctx.retention = q.retention;
    int64_t initial_depth = -1;
    if (auto a = services.sqs().GetQueueAttributes(q.url, {"ApproximateNumberOfMessages"}); a.ok()) {
      try {
        initial_depth = std::stoll(a->at("ApproximateNumberOfMessages"));
      } catch (...) {
      }
    }
    QueueDrainer drainer(services.sqs(), **store, services.clock(), q, options.drain, ctx);
    std::atomic<bool> done{false};
    std::thread watcher([&] {
      auto start = std::chrono::steady_clock::now();
      bool printed = false;
      while (!done) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        if (stop) drainer.RequestStop();
        static thread_local int tick = 0;
        if (!show_progress || ++tick % 5 != 0) continue;
        DrainStats s = drainer.Snapshot();
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        double rate = secs > 0 ? s.archived / secs : 0;
        int64_t left = initial_depth >= 0 ? std::max<int64_t>(0, initial_depth - static_cast<int64_t>(s.archived)) : -1;
        std::string eta = (left >= 0 && rate > 0) ? FormatDuration(std::chrono::seconds(static_cast<int64_t>(left / rate)))
                                                  : "?";
        std::fprintf(stderr, "\r%s: received %lu, archived %lu, deleted %lu, %.0f msg/s, left ~%s, ETA %s   ",
                     q.name.c_str(), static_cast<unsigned long>(s.received), static_cast<unsigned long>(s.archived),
                     static_cast<unsigned long>(s.deleted), rate, left >= 0 ? std::to_string(left).c_str() : "?",
                     eta.c_str());
        printed = true;
      }
      if (printed) std::fprintf(stderr, "\n");
    });
    DrainResult r = drainer.Run();
    done = true;
    watcher.join();
    results.push_back(std::move(r));
    if (!results.back().status.ok()) break;  // stop before touching more queues
  }

  // Summary and exit code.
  int code = 0;
  std::string reason;
  for (const auto& r : results) {
    const DrainStats& s = r.stats;
    if (!r.status.ok()) {
      code = 1;
      reason = fmt::format("{}: {}", r.queue.name, r.status.ToString());
      break;
    }
    if (r.stopped) {
      code = 130;
      reason = "stopped by signal; what was in flight was archived and deleted, the rest released";
    } else if (!options.drain.keep && !options.drain.dry_run && (s.duplicates > 0 || s.delete_failures > 0) &&
               code == 0) {
      code = 3;
      reason = fmt::format("{}: {} archived messages could not be deleted and stay in the DLQ (they will be "
                           "archived again; readers de-duplicate)",
                           r.queue.name, s.duplicates + s.delete_failures);
    }
  }
  if (results.size() < queues.size() && code == 0) {
    code = stop ? 130 : 1;
    if (reason.empty()) reason = "not every queue was processed";
  }
  if (options.output == "json") {
    std::string out = fmt::format("{{\"ok\":{},\"exit_code\":{},\"destination\":", code == 0, code);
    AppendJsonString(out, options.destination);
    out += ",\"dry_run\":";
    out += options.drain.dry_run ? "true" : "false";
    out += ",\"queues\":[";
    for (size_t i = 0; i < results.size(); ++i) {
      if (i) out += ',';
      AppendResultJson(out, results[i], uri_prefix);
    }
    out += "],\"reason\":";
    AppendJsonString(out, reason);
    out += "}\n";
    std::fwrite(out.data(), 1, out.size(), stdout);
  } else {
    for (const auto& r : results) {
      const DrainStats& s = r.stats;
      double secs = r.elapsed.count() / 1000.0;
      if (options.drain.dry_run) {
        std::printf("%s: dry run: %lu messages would be archived, %lu not selected (received %lu times; receive "
                    "counts went up)\n",
                    r.queue.name.c_str(), static_cast<unsigned long>(s.selected), static_cast<unsigned long>(s.skipped),
                    static_cast<unsigned long>(s.received));
        continue;
      }
      std::printf("%s: archived %lu, deleted %lu, duplicates %lu, skipped %lu, objects %lu (%s) in %.1fs (%.0f msg/s)%s\n",
                  r.queue.name.c_str(), static_cast<unsigned long>(s.archived), static_cast<unsigned long>(s.deleted),
                  static_cast<unsigned long>(s.duplicates), static_cast<unsigned long>(s.skipped),
                  static_cast<unsigned long>(s.objects), HumanBytes(s.bytes_uploaded).c_str(), secs,
                  secs > 0 ? s.archived / secs : 0.0, options.drain.keep ? " [--keep: nothing deleted]" : "");
      size_t shown = 0;
      for (const auto& k : r.keys) {
        if (++shown > 10) {
          std::printf("  ... and %zu more objects\n", r.keys.size() - 10);
          break;
        }
        std::printf("  %s%s\n", uri_prefix.c_str(), k.c_str());
      }
    }
    if (code != 0) std::fprintf(stderr, "error: %s\n", reason.c_str());
  }
  return code;
}

}  // namespace dlq
