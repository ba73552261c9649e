#include "archiver/drain_completion.h"

#include <gtest/gtest.h>

namespace dlq {
namespace {

CompletionFacts Clean() {
  CompletionFacts f;
  f.queue_seen_empty = true;
  f.max_examined_held = 20;
  return f;
}

TEST(JudgeCompletionTest, EmptyQueueAndNothingLeftIsDrained) {
  int checks = 0;
  Completion c = JudgeCompletion(Clean(), [&] {
    ++checks;
    return std::string();
  });
  EXPECT_TRUE(c.drained);
  EXPECT_FALSE(c.incomplete);
  EXPECT_TRUE(c.reason.empty());
  EXPECT_EQ(checks, 1);
}

TEST(JudgeCompletionTest, QueueNeverSeenEmptyIsIncompleteAndSkipsTheFinalCheck) {
  CompletionFacts f = Clean();
  f.queue_seen_empty = false;
  f.incomplete_reason = "receives brought nothing new";
  int checks = 0;
  Completion c = JudgeCompletion(f, [&] {
    ++checks;
    return std::string();
  });
  EXPECT_FALSE(c.drained);
  EXPECT_TRUE(c.incomplete);
  EXPECT_EQ(c.reason, "receives brought nothing new");
  EXPECT_EQ(checks, 0);
}

TEST(JudgeCompletionTest, FinalCheckThatSeesMessagesMakesItIncompleteWithItsReason) {
  Completion c = JudgeCompletion(Clean(), [] { return std::string("the queue still shows 3 visible"); });
  EXPECT_FALSE(c.drained);
  EXPECT_TRUE(c.incomplete);
  EXPECT_EQ(c.reason, "the queue still shows 3 visible");
}

TEST(JudgeCompletionTest, ReleasedMessagesAreIncompleteAndCounted) {
  CompletionFacts f = Clean();
  f.released = 7;
  Completion c = JudgeCompletion(f, nullptr);
  EXPECT_TRUE(c.incomplete);
  EXPECT_EQ(c.reason, "7 messages were released unarchived; run again");
}

TEST(JudgeCompletionTest, OneReleasedMessageIsCountedInTheSingular) {
  CompletionFacts f = Clean();
  f.released = 1;
  EXPECT_EQ(JudgeCompletion(f, nullptr).reason, "1 message was released unarchived; run again");
  f.released = 0;
  f.corrupt_ids = {"m-1"};
  EXPECT_EQ(JudgeCompletion(f, nullptr).reason,
            "1 message failed its MD5 check on every receive and was left in the DLQ: m-1");
}

TEST(JudgeCompletionTest, CorruptMessagesAreNamed) {
  CompletionFacts f = Clean();
  f.corrupt_ids = {"m-1", "m-2"};
  Completion c = JudgeCompletion(f, nullptr);
  EXPECT_TRUE(c.incomplete);
  EXPECT_EQ(c.reason, "2 messages failed their MD5 check on every receive and were left in the DLQ: m-1, m-2");
}

TEST(JudgeCompletionTest, PassThatReleasedEarlyIsCompleteOnlyIfItExaminedAsManyAsWereThere) {
  CompletionFacts f = Clean();
  f.examined_released_early = true;
  f.initial_total = 60;
  f.examined = 60;
  EXPECT_TRUE(JudgeCompletion(f, nullptr).drained);
  f.examined = 59;
  Completion c = JudgeCompletion(f, nullptr);
  EXPECT_TRUE(c.incomplete);
  EXPECT_EQ(c.reason,
            "the pass examined 59 distinct messages of ~60 (more than 20 examined messages cannot be held at once)");
  f.examined = 100;
  f.initial_total = -1;  // depth unknown at the start: cannot tell
  EXPECT_TRUE(JudgeCompletion(f, nullptr).incomplete);
}

TEST(JudgeCompletionTest, BudgetReachedIsNeitherDrainedNorIncomplete) {
  CompletionFacts f = Clean();
  f.budget_reached = true;
  Completion c = JudgeCompletion(f, nullptr);
  EXPECT_FALSE(c.drained);
  EXPECT_FALSE(c.incomplete);
  f.queue_seen_empty = false;
  c = JudgeCompletion(f, nullptr);
  EXPECT_FALSE(c.drained);
  EXPECT_FALSE(c.incomplete);
}

}  // namespace
}  // namespace dlq
