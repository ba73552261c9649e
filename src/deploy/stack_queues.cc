// The queues a stack covers, from discovery or the config (stack.h).
#include <fmt/format.h>

#include <algorithm>
#include <string>
#include <vector>

#include "common/strings.h"
#include "deploy/stack_internal.h"

namespace dlq {

namespace stack_internal {

std::string AccountOfArn(std::string_view arn) {
  auto parts = Split(arn, ':');  // arn, partition, service, region, account, resource
  return parts.size() >= 6 ? std::string(parts[4]) : "";
}

}  // namespace stack_internal

using stack_internal::AccountOfArn;
using std::chrono::seconds;

StackQueue StackQueueFromDiscovery(const GroupConfig& group, const DiscoveredQueue& q) {
  StackQueue s;
  s.group = group.name;
  s.name = q.name;
  s.url = q.url;
  s.region = q.region;
  s.account_id = q.account_id;
  s.role_arn = group.role_arn;
  s.fifo = q.fifo;
  s.retention = q.retention;
  s.source_retention = q.MaxSourceRetention();
  s.discovered = true;
  return s;
}

Result<std::vector<StackQueue>> StackQueuesFromConfig(const GroupConfig& group, seconds retention,
                                                      seconds source_retention) {
  std::vector<StackQueue> out;
  for (const std::string& entry : group.queues) {
    StackQueue s;
    s.group = group.name;
    s.role_arn = group.role_arn;
    s.region = group.region;
    s.retention = retention;
    s.source_retention = source_retention;
    if (StartsWith(entry, "https://") || StartsWith(entry, "http://")) {
      std::string_view rest = std::string_view(entry).substr(entry.find("://") + 3);
      auto slash = rest.find('/');
      auto parts = slash == std::string_view::npos ? std::vector<std::string_view>()
                                                   : Split(rest.substr(slash), '/');  // "", ACCOUNT, NAME
      if (parts.size() != 3 || parts[2].empty()) {
        return InvalidArgument(fmt::format("group {}: queue URL {} does not end in /ACCOUNT/NAME", group.name, entry));
      }
      s.url = entry;
      s.account_id = std::string(parts[1]);
      s.name = std::string(parts[2]);
    } else {
      s.name = entry;
      if (!group.role_arn.empty()) s.account_id = AccountOfArn(group.role_arn);
    }
    s.fifo = EndsWith(s.name, ".fifo");
    if (std::find_if(group.exclude.begin(), group.exclude.end(),
                     [&](const std::string& e) { return e == s.name || e == entry; }) != group.exclude.end()) {
      continue;
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace dlq
