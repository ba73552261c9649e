#include "replay/redrive_plan.h"

namespace dlq {

RedriveOptions MakeRedriveOptions(const RedrivePlan& plan, uint64_t selection, std::chrono::milliseconds window,
                                  int64_t visible_at_start) {
  RedriveOptions o;
  o.canary = plan.canary.value_or(DefaultCanary(selection));
  o.ramp = plan.ramp;
  o.window = plan.window.value_or(window);
  o.check = plan.check.value_or(DefaultCheck(o.window));
  o.canary_max_refailures = plan.canary_max_refailures;
  o.max_refailures = plan.max_refailures;
  o.max_refailures_fraction = plan.max_refailures_fraction;
  o.max_backlog = plan.max_backlog.value_or(DefaultMaxBacklog(visible_at_start));
  o.max_backlog_age = plan.max_backlog_age;
  return o;
}

RedriveOptions MakeBackpressureOptions(const RedrivePlan& plan) {
  RedriveOptions o;
  o.canary = 0;
  o.max_backlog = plan.max_backlog.value_or(0);
  o.max_backlog_age = plan.max_backlog_age;
  return o;
}

}  // namespace dlq
