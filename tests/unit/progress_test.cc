// Progress on stderr: a line redrawn on a terminal, plain lines at a steady
// interval anywhere else (issue 37: a replay or archive whose stderr is a file
// printed nothing for its whole run).
#include "common/progress.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <string>

#include "testing/fake_clock.h"
#include "testing/read_all.h"

namespace dlq {
namespace {

TEST(ProgressTest, AutoIsPlainLinesWhenStderrIsNotATerminal) {
  EXPECT_EQ(ChooseProgressMode("auto", /*stderr_is_tty=*/false), ProgressMode::kPlain);
  EXPECT_EQ(ChooseProgressMode("auto", true), ProgressMode::kTerminal);
  EXPECT_EQ(ChooseProgressMode("always", false), ProgressMode::kTerminal);
  EXPECT_EQ(ChooseProgressMode("never", false), ProgressMode::kOff);
  EXPECT_EQ(ChooseProgressMode("never", true), ProgressMode::kOff);
}

TEST(ProgressTest, PlainLinesComeEveryIntervalAndAtOnceWhenForcedWithoutEscapes) {
  FakeClock clock;
  std::FILE* err = std::tmpfile();
  {
    ProgressPrinter p(ProgressMode::kPlain, clock, err, std::chrono::seconds(10));
    p.Show("line 1");  // the first line at once
    clock.Advance(std::chrono::seconds(3));
    p.Show("line 2");  // within the interval: kept back
    p.Show("phase change", /*force=*/true);
    clock.Advance(std::chrono::seconds(9));
    p.Show("line 3");  // 9 s after the last shown: kept back
    clock.Advance(std::chrono::seconds(1));
    p.Show("line 4\x1b[31m");  // 10 s: shown, terminal-safe
  }
  const std::string out = ReadAll(err);
  std::fclose(err);
  EXPECT_NE(out.find("line 1\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("line 2"), std::string::npos) << out;
  EXPECT_NE(out.find("phase change\n"), std::string::npos) << out;
  EXPECT_EQ(out.find("line 3"), std::string::npos) << out;
  EXPECT_NE(out.find("line 4"), std::string::npos) << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 3) << out;
  EXPECT_EQ(out.find('\r'), std::string::npos) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << out;
}

TEST(ProgressTest, NeverPrintsNothing) {
  FakeClock clock;
  std::FILE* err = std::tmpfile();
  {
    ProgressPrinter p(ProgressMode::kOff, clock, err);
    p.Show("anything", true);
  }
  EXPECT_EQ(ReadAll(err), "");
  std::fclose(err);
}

}  // namespace
}  // namespace dlq
