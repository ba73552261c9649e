#include "archiver/selection_pass.h"

#include "archive/expiry.h"

namespace dlq {

bool SelectionPass::Selects(const Message& m, SystemTime now) const {
  switch (options_.selection.kind) {
    case SelectionKind::kAll: return true;
    case SelectionKind::kOlderThan: {
      auto sent = AttributeMillis(m, "SentTimestamp");
      return !sent || *sent <= now - options_.selection.window;
    }
    case SelectionKind::kExpiringWithin:
      return ComputeExpiry(m, options_.fifo, options_.retention, now) <= now + options_.selection.window;
  }
  return true;
}

SelectionPass::Sorted SelectionPass::Sort(std::vector<Message>&& msgs, SystemTime now) {
  Sorted out;
  out.take.reserve(msgs.size());
  for (Message& m : msgs) {
    const bool selected = Selects(m, now);
    if (selected && !options_.dry_run && !options_.keep) {
      out.progress = true;
      out.take.push_back(std::move(m));
      continue;
    }
    const bool fresh = seen_.insert(m.message_id).second;
    if (fresh) out.progress = true;
    if (fresh && selected && options_.dry_run) ++out.selected;
    if (fresh && !selected) ++out.skipped;
    if (fresh && selected && !options_.dry_run) {
      out.take.push_back(std::move(m));  // keep: archived, then held to the end of the pass
      continue;
    }
    // Examined and not taken (or a copy already archived that came back).
    out.examined.push_back(std::move(m));
  }
  return out;
}

}  // namespace dlq
