#include "archiver/receiver_governor.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

namespace dlq {
namespace {

using namespace std::chrono_literals;
using TimePoint = ReceiverGovernor::TimePoint;

// A queue server that serves `parallel` receives at once, each in
// `service`, and returns `per_receive` messages. With L receivers its
// receives come back evenly spaced: L / max(1, L / parallel) per service
// time (more receivers than it serves at once only wait in its queue).
struct Server {
  int parallel = 1;
  std::chrono::microseconds service{1000};
  uint64_t per_receive = 10;

  std::chrono::nanoseconds Spacing(int receivers) const {
    const double waves = std::max(1.0, static_cast<double>(receivers) / parallel);
    return std::chrono::nanoseconds(
        static_cast<int64_t>(std::chrono::nanoseconds(service).count() * waves / receivers));
  }
};

// Feeds the governor `duration` of receives from `server`, at the level it
// sets as it goes; returns every level it set, in order.
std::vector<int> Feed(ReceiverGovernor& g, const Server& server, TimePoint& now, std::chrono::milliseconds duration) {
  std::vector<int> levels;
  const TimePoint end = now + duration;
  while (now < end) {
    now += server.Spacing(g.limit());
    if (g.Observe(now, server.per_receive)) levels.push_back(g.limit());
  }
  return levels;
}

ReceiverGovernor::Options Max(int max, std::chrono::milliseconds reprobe_after = 30s) {
  ReceiverGovernor::Options o;
  o.max_receivers = max;
  o.reprobe_after = reprobe_after;
  return o;
}

TEST(ReceiverGovernor, StartsAtTwoAndClimbsToTheMaximumWhileEachDoublingPays) {
  TimePoint now{};
  ReceiverGovernor g(Max(8), now);
  EXPECT_EQ(g.limit(), 2);
  EXPECT_FALSE(g.settled());
  Server sqs{.parallel = 100, .service = 20ms};  // SQS: receives side by side
  EXPECT_EQ(Feed(g, sqs, now, 2000ms), (std::vector<int>{4, 8}));
  EXPECT_TRUE(g.settled());
  EXPECT_EQ(g.limit(), 8);
  EXPECT_NEAR(g.settled_rate(), 8 * 10 / 0.020, 1);  // 8 receives of 10 per 20 ms
}

TEST(ReceiverGovernor, AServerThatServesOneReceiveAtATimeKeepsTwoReceivers) {
  TimePoint now{};
  ReceiverGovernor g(Max(8), now);
  Server serial{.parallel = 1, .service = 1ms};
  EXPECT_EQ(Feed(g, serial, now, 2000ms), (std::vector<int>{4, 2}));  // 4 was tried, did not pay
  EXPECT_TRUE(g.settled());
  EXPECT_EQ(g.limit(), 2);
  EXPECT_NEAR(g.settled_rate(), 10000, 1);
}

TEST(ReceiverGovernor, SettlesAtTheLastDoublingThatPaid) {
  TimePoint now{};
  ReceiverGovernor g(Max(16), now);
  Server three{.parallel = 3, .service = 10ms};  // 2 -> 4 brings 1.5x, 4 -> 8 nothing
  EXPECT_EQ(Feed(g, three, now, 3000ms), (std::vector<int>{4, 8, 4}));
  EXPECT_EQ(g.limit(), 4);
}

TEST(ReceiverGovernor, AStepShortOfADoublingNeedsAProportionalGain) {
  TimePoint now{};
  ReceiverGovernor g(Max(6), now);  // 2 -> 4 -> 6: the last step's ideal gain is 1.5x, 15% is asked
  Server five{.parallel = 5, .service = 10ms};
  EXPECT_EQ(Feed(g, five, now, 3000ms), (std::vector<int>{4, 6}));  // 4 -> 5 served at once: +25%
  EXPECT_EQ(g.limit(), 6);
  ReceiverGovernor h(Max(6), now);
  Server four{.parallel = 4, .service = 10ms};
  EXPECT_EQ(Feed(h, four, now, 3000ms), (std::vector<int>{4, 6, 4}));  // 6 brings nothing over 4
  EXPECT_EQ(h.limit(), 4);
}

TEST(ReceiverGovernor, ProbesAgainAndFollowsAServerThatGotFaster) {
  TimePoint now{};
  ReceiverGovernor g(Max(8, 10s), now);
  Feed(g, Server{.parallel = 1, .service = 1ms}, now, 2000ms);
  ASSERT_EQ(g.limit(), 2);
  // Before the probe is due, nothing moves.
  EXPECT_TRUE(Feed(g, Server{.parallel = 100, .service = 1ms}, now, 7000ms).empty());
  EXPECT_EQ(g.limit(), 2);
  // Then it probes from half its level (2 at least) and climbs.
  EXPECT_EQ(Feed(g, Server{.parallel = 100, .service = 1ms}, now, 5000ms), (std::vector<int>{4, 8}));
  EXPECT_EQ(g.limit(), 8);
  EXPECT_TRUE(g.settled());
}

TEST(ReceiverGovernor, ProbesAgainAndFollowsAServerThatGotSlower) {
  TimePoint now{};
  ReceiverGovernor g(Max(8, 10s), now);
  Feed(g, Server{.parallel = 100, .service = 20ms}, now, 2000ms);
  ASSERT_EQ(g.limit(), 8);
  // The server now serves one receive at a time: each probe starts from
  // half the level, and the doubling that follows no longer pays.
  Server serial{.parallel = 1, .service = 1ms};
  EXPECT_EQ(Feed(g, serial, now, 12000ms), (std::vector<int>{4, 8, 4}));
  EXPECT_EQ(g.limit(), 4);
  EXPECT_EQ(Feed(g, serial, now, 11000ms), (std::vector<int>{2, 4, 2}));
  EXPECT_EQ(g.limit(), 2);
}

TEST(ReceiverGovernor, EmptyReceivesNeverRaiseTheLevel) {
  TimePoint now{};
  ReceiverGovernor g(Max(8), now);
  EXPECT_EQ(Feed(g, Server{.parallel = 100, .service = 2000ms, .per_receive = 0}, now, 40000ms),
            (std::vector<int>{4, 2}));
  EXPECT_EQ(g.limit(), 2);
  EXPECT_DOUBLE_EQ(g.settled_rate(), 0);
}

TEST(ReceiverGovernor, APhaseLastsItsMinimumTimeAndReceivesPerReceiver) {
  TimePoint now{};
  ReceiverGovernor g(Max(8), now);
  // 8 receives (4 per receiver at 2) in 80 ms: too short a phase.
  for (int i = 1; i <= 8; ++i) EXPECT_FALSE(g.Observe(now + i * 10ms, 10));
  // 250 ms have passed at the 25th receive: the phase ends there.
  for (int i = 9; i <= 24; ++i) EXPECT_FALSE(g.Observe(now + i * 10ms, 10));
  EXPECT_TRUE(g.Observe(now + 250ms, 10));
  EXPECT_EQ(g.limit(), 4);
  // At 4 a phase needs 16 receives, however long they take.
  const TimePoint phase = now + 250ms;
  for (int i = 1; i <= 15; ++i) EXPECT_FALSE(g.Observe(phase + i * 1s, 10));
  EXPECT_TRUE(g.Observe(phase + 16s, 10));
}

TEST(ReceiverGovernor, NothingToChooseWithOneOrTwoReceivers) {
  for (int max : {1, 2}) {
    TimePoint now{};
    ReceiverGovernor g(Max(max), now);
    EXPECT_EQ(g.limit(), max);
    EXPECT_TRUE(g.settled());
    EXPECT_TRUE(Feed(g, Server{.parallel = 100, .service = 1ms}, now, 120000ms).empty());
    EXPECT_EQ(g.limit(), max);
  }
}

}  // namespace
}  // namespace dlq
