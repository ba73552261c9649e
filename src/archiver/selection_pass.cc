#include "archiver/selection_pass.h"

#include <utility>

#include "archive/expiry.h"

namespace dlq {

SelectionPass::SelectionPass(Options options) : options_(std::move(options)) {
  examined_.seq = UINT64_MAX;
  set_aside_.seq = UINT64_MAX - 1;
}

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
  for (const Message& m : msgs) ++receipts_[m.message_id];
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

int SelectionPass::OwnReceives(const std::string& message_id) const {
  auto it = receipts_.find(message_id);
  const int now = it == receipts_.end() ? 0 : it->second;
  return now + (options_.prior_own_receives ? options_.prior_own_receives(message_id) : 0);
}

int SelectionPass::NoteCorrupt(const HeldMessage& receipt) {
  const int n = ++corrupt_counts_[receipt.message_id];
  if (n >= options_.corrupt_receipts_to_give_up) {
    // Set aside until the end, so receives reach the rest.
    set_aside_.held.push_back(receipt);
    set_aside_.held.back().visible_until = receipt.received_at + options_.visibility_timeout;
  }
  return n;
}

std::vector<HeldMessage> SelectionPass::HoldExamined(std::vector<HeldMessage>&& held) {
  std::vector<HeldMessage> release_now;
  for (HeldMessage& h : held) examined_.held.push_back(std::move(h));
  if (examined_.held.size() >= options_.max_examined_held) {
    release_now.swap(examined_.held);
    released_early_ = true;
  }
  return release_now;
}

void SelectionPass::AppendDue(SteadyTime now, std::vector<VisibilityDue>& due) const {
  bool seal = false;  // only a building batch seals
  dlq::AppendDue(examined_, now, options_.visibility_timeout, /*building=*/false, /*moves=*/false, seal, due);
}

bool SelectionPass::RecordDue(const VisibilityDue& d, SteadyTime until) {
  return dlq::RecordDue(examined_, d, until);
}

SelectionPass::End SelectionPass::Finish() {
  End end;
  end.examined.swap(examined_.held);
  end.set_aside.swap(set_aside_.held);
  for (const auto& [id, n] : corrupt_counts_) {
    if (n >= options_.corrupt_receipts_to_give_up) end.corrupt_ids.push_back(id);
  }
  return end;
}

}  // namespace dlq
