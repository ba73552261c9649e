// The guard flags of `replay`: defaults (a canary with --to-source only),
// values parsed, and bad values refused naming the flag before any call.
#include "app/redrive_flags.h"

#include <gtest/gtest.h>

#include <functional>
#include <utility>
#include <vector>

namespace dlq {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(RedriveFlagsTest, TheCanaryIsOnWithToSourceAndOffWithToQueueUnlessGiven) {
  RedriveFlags flags;
  EXPECT_TRUE(ParseRedriveFlags(flags, /*to_source=*/true)->guarded);
  EXPECT_FALSE(ParseRedriveFlags(flags, /*to_source=*/false)->guarded);
  flags.canary = 25;
  auto plan = ParseRedriveFlags(flags, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_TRUE(plan->guarded);
  EXPECT_EQ(plan->canary, 25u);
  RedriveFlags off;
  off.no_canary = true;
  EXPECT_FALSE(ParseRedriveFlags(off, true)->guarded);
}

TEST(RedriveFlagsTest, DefaultsAreTheSpecs) {
  auto plan = ParseRedriveFlags(RedriveFlags{}, true);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->ramp, (std::vector<double>{0.05, 0.25, 1.0}));
  EXPECT_FALSE(plan->window.has_value());
  EXPECT_FALSE(plan->check.has_value());
  EXPECT_FALSE(plan->max_refailures.has_value());
  EXPECT_DOUBLE_EQ(plan->max_refailures_fraction, 0.01);
  EXPECT_EQ(plan->canary_max_refailures, 0u);
  EXPECT_FALSE(plan->max_backlog.has_value());
  EXPECT_EQ(plan->max_backlog_age, seconds(0));
}

TEST(RedriveFlagsTest, ParsesEveryFlag) {
  RedriveFlags flags;
  flags.canary = 5;
  flags.ramp = "10,50";
  flags.window = "90s";
  flags.check = "5m";
  flags.max_refailures = "3";
  flags.canary_max_refailures = 1;
  flags.max_backlog = {"500", "10m"};
  auto plan = ParseRedriveFlags(flags, false);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ramp, (std::vector<double>{0.1, 0.5, 1.0}));  // 100 added
  EXPECT_EQ(plan->window, milliseconds(90000));
  EXPECT_EQ(plan->check, milliseconds(300000));
  EXPECT_EQ(plan->max_refailures, 3u);
  EXPECT_EQ(plan->max_backlog, 500);
  EXPECT_EQ(plan->max_backlog_age, seconds(600));
  RedriveOptions o = MakeRedriveOptions(*plan, 1000, milliseconds(105000), 40);
  EXPECT_EQ(o.canary, 5u);
  EXPECT_EQ(o.window, milliseconds(90000));  // --window wins over the attributes
  EXPECT_EQ(o.check, milliseconds(300000));
  EXPECT_EQ(o.canary_max_refailures, 1u);
  EXPECT_EQ(o.max_refailures, 3u);
  EXPECT_EQ(o.max_backlog, 500);
  EXPECT_EQ(o.max_backlog_age, seconds(600));
  flags.max_refailures = "2.5%";
  EXPECT_DOUBLE_EQ(ParseRedriveFlags(flags, false)->max_refailures_fraction, 0.025);
}

TEST(RedriveFlagsTest, UnsetValuesComeFromTheSelectionAndTheQueues) {
  auto plan = ParseRedriveFlags(RedriveFlags{}, true);
  ASSERT_TRUE(plan.ok());
  RedriveOptions o = MakeRedriveOptions(*plan, 5000, milliseconds(105000), 400);
  EXPECT_EQ(o.canary, DefaultCanary(5000));
  EXPECT_EQ(o.window, milliseconds(105000));
  EXPECT_EQ(o.check, DefaultCheck(milliseconds(105000)));
  EXPECT_EQ(o.max_backlog, DefaultMaxBacklog(400));
  EXPECT_FALSE(o.max_refailures.has_value());
  EXPECT_DOUBLE_EQ(o.max_refailures_fraction, 0.01);
}

TEST(RedriveFlagsTest, BadValuesAreRefusedNamingTheFlag) {
  auto refused = [](RedriveFlags flags, const std::string& flag) {
    auto plan = ParseRedriveFlags(flags, true);
    ASSERT_FALSE(plan.ok()) << flag;
    EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(flag), std::string::npos) << plan.status().message();
  };
  RedriveFlags f;
  f.canary = 3;
  f.no_canary = true;
  refused(f, "--no-canary");
  f = {};
  f.canary = 0;
  refused(f, "--canary");
  for (const char* ramp : {"", "25,5", "0,50", "5,150", "5,,25", "x"}) {
    f = {};
    f.ramp = ramp;
    refused(f, "--ramp");
  }
  f = {};
  f.window = "soon";
  refused(f, "--window");
  f = {};
  f.check = "0s";
  refused(f, "--check");
  for (const char* bound : {"-1", "1.5", "150%", "x%", ""}) {
    f = {};
    f.max_refailures = bound;
    refused(f, "--max-refailures");
  }
  for (const std::vector<std::string>& backlog :
       std::vector<std::vector<std::string>>{{"0"}, {"lots"}, {"10", "20"}, {"5m", "10m"}}) {
    f = {};
    f.max_backlog = backlog;
    refused(f, "--max-backlog");
  }
}

// Issue 37: a flag that is accepted takes effect, or is refused.
TEST(RedriveFlagsTest, CanaryFlagsWithoutACanaryAreRefusedNamingTheFlag) {
  const std::vector<std::pair<std::string, std::function<void(RedriveFlags&)>>> flags = {
      {"--ramp", [](RedriveFlags& f) { f.ramp = "5,25,100"; }},
      {"--window", [](RedriveFlags& f) { f.window = "90s"; }},
      {"--check", [](RedriveFlags& f) { f.check = "30s"; }},
      {"--max-refailures", [](RedriveFlags& f) { f.max_refailures = "1%"; }},
      {"--canary-max-refailures", [](RedriveFlags& f) { f.canary_max_refailures = 0; }},
  };
  for (const auto& [name, set] : flags) {
    RedriveFlags to_queue;  // --to-queue without --canary
    set(to_queue);
    auto plan = ParseRedriveFlags(to_queue, /*to_source=*/false);
    ASSERT_FALSE(plan.ok()) << name;
    EXPECT_EQ(plan.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(plan.status().message().find(name + " applies to a guarded replay only"), std::string::npos)
        << plan.status().message();
    RedriveFlags no_canary;  // --to-source --no-canary
    no_canary.no_canary = true;
    set(no_canary);
    plan = ParseRedriveFlags(no_canary, /*to_source=*/true);
    ASSERT_FALSE(plan.ok()) << name;
    EXPECT_NE(plan.status().message().find("--no-canary"), std::string::npos) << plan.status().message();
    RedriveFlags guarded;  // the same flag with a canary is taken
    guarded.canary = 5;
    set(guarded);
    EXPECT_TRUE(ParseRedriveFlags(guarded, false).ok()) << name;
  }
}

TEST(RedriveFlagsTest, MaxBacklogWithoutACanaryIsBackpressureOnly) {
  RedriveFlags f;
  f.no_canary = true;
  f.max_backlog = {"20"};
  auto plan = ParseRedriveFlags(f, true);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_FALSE(plan->guarded);
  EXPECT_TRUE(plan->backpressure);
  RedriveOptions o = MakeBackpressureOptions(*plan);
  EXPECT_EQ(o.canary, 0u);
  EXPECT_EQ(o.max_backlog, 20);
  EXPECT_TRUE(o.BackpressureOnly());
  EXPECT_TRUE(o.Validate().ok());
  RedriveFlags plain;  // no --max-backlog: nothing to hold
  EXPECT_FALSE(ParseRedriveFlags(plain, false)->backpressure);
}

}  // namespace
}  // namespace dlq
