#include "server/http_connection_table.h"

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "testing/fake_clock.h"

namespace dlq {
namespace {

using Phase = HttpConnectionPhase;

// A table of connections over socket pairs: the table owns one end, the
// test keeps the client's end to see the close.
class HttpConnectionTableTest : public ::testing::Test {
 protected:
  ~HttpConnectionTableTest() override {
    for (int fd : clients_) ::close(fd);
  }

  // A new connection in `phase`; its id.
  uint64_t Open(Phase phase) {
    int fds[2];
    EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds), 0);
    clients_.push_back(fds[1]);
    const SteadyTime now = clock_.SteadyNow();
    const uint64_t id = table_.Add(fds[0], "127.0.0.1", now, now + std::chrono::seconds(5));
    table_.Find(id)->phase = phase;
    client_of_.resize(id + 1, -1);
    client_of_[id] = fds[1];
    return id;
  }

  // True when the table closed its end of connection `id`.
  bool ClosedOnTheServerSide(uint64_t id) {
    char c;
    return ::recv(client_of_[id], &c, 1, 0) == 0;
  }

  FakeClock clock_;
  HttpConnectionTable table_{clock_, 3};
  std::vector<int> clients_;
  std::vector<int> client_of_;
};

TEST_F(HttpConnectionTableTest, NeverDropsAConnectionWhoseRequestIsBeingAnswered) {
  const SteadyTime now = clock_.SteadyNow();
  HttpConnection c;
  c.accepted_at = now - std::chrono::seconds(10);
  c.in = "GET / HT";
  c.phase = Phase::kWorking;
  EXPECT_FALSE(HttpConnectionTable::Droppable(c, now));
  c.phase = Phase::kWriting;
  EXPECT_FALSE(HttpConnectionTable::Droppable(c, now));
  c.phase = Phase::kLingering;
  EXPECT_TRUE(HttpConnectionTable::Droppable(c, now));
  c.phase = Phase::kReading;
  EXPECT_TRUE(HttpConnectionTable::Droppable(c, now));  // part-way through a request
}

TEST_F(HttpConnectionTableTest, ASilentNewConnectionKeepsItsSlotForTheGrace) {
  const SteadyTime now = clock_.SteadyNow();
  HttpConnection c;
  c.accepted_at = now;
  EXPECT_FALSE(HttpConnectionTable::Droppable(c, now));
  EXPECT_FALSE(
      HttpConnectionTable::Droppable(c, now + HttpConnectionTable::kFirstBytesGrace - std::chrono::milliseconds(1)));
  EXPECT_TRUE(HttpConnectionTable::Droppable(c, now + HttpConnectionTable::kFirstBytesGrace));
  c.served = 1;  // idle between two requests
  EXPECT_TRUE(HttpConnectionTable::Droppable(c, now));
}

TEST_F(HttpConnectionTableTest, HasRoomWhileASlotIsFreeOrHeldByADroppableConnection) {
  Open(Phase::kWorking);
  Open(Phase::kWriting);
  EXPECT_TRUE(table_.HasRoom());
  EXPECT_FALSE(table_.full());
  const uint64_t silent = Open(Phase::kReading);
  EXPECT_TRUE(table_.full());
  EXPECT_FALSE(table_.HasRoom());  // the silent one is within its grace
  clock_.Advance(HttpConnectionTable::kFirstBytesGrace);
  EXPECT_TRUE(table_.HasRoom());
  table_.Find(silent)->phase = Phase::kWorking;
  EXPECT_FALSE(table_.HasRoom());
}

TEST_F(HttpConnectionTableTest, FreesTheOldestLingeringConnectionFirstWithoutReadingReaders) {
  const uint64_t reader = Open(Phase::kReading);
  table_.Find(reader)->in = "GET / HT";
  const uint64_t lingering1 = Open(Phase::kLingering);
  const uint64_t lingering2 = Open(Phase::kLingering);
  std::vector<uint64_t> read;
  EXPECT_TRUE(table_.FreeASlot([&](uint64_t id) {
    read.push_back(id);
    return true;
  }));
  EXPECT_TRUE(read.empty());
  EXPECT_EQ(table_.Find(lingering1), nullptr);
  EXPECT_TRUE(ClosedOnTheServerSide(lingering1));
  EXPECT_NE(table_.Find(lingering2), nullptr);
  EXPECT_NE(table_.Find(reader), nullptr);
}

TEST_F(HttpConnectionTableTest, FreesTheOldestDroppableReaderAfterReadingIt) {
  const uint64_t completes = Open(Phase::kReading);
  const uint64_t partial = Open(Phase::kReading);
  const uint64_t answering = Open(Phase::kWorking);
  table_.Find(completes)->in = "GET / HT";
  table_.Find(partial)->in = "GET / HT";
  std::vector<uint64_t> read;
  EXPECT_TRUE(table_.FreeASlot([&](uint64_t id) {
    read.push_back(id);
    // Its read completes the first one's request: it is answered, not dropped.
    if (id == completes) table_.Find(id)->phase = Phase::kWorking;
    return true;
  }));
  EXPECT_EQ(read, (std::vector<uint64_t>{completes, partial}));
  EXPECT_NE(table_.Find(completes), nullptr);
  EXPECT_EQ(table_.Find(partial), nullptr);
  EXPECT_TRUE(ClosedOnTheServerSide(partial));
  EXPECT_NE(table_.Find(answering), nullptr);
}

TEST_F(HttpConnectionTableTest, AReaderThatEndsWhileReadFreesItsSlot) {
  const uint64_t reader = Open(Phase::kReading);
  Open(Phase::kWorking);
  Open(Phase::kWorking);
  EXPECT_TRUE(table_.FreeASlot([&](uint64_t id) {
    table_.Close(id);  // the client had gone
    return false;
  }));
  EXPECT_EQ(table_.Find(reader), nullptr);
  EXPECT_EQ(table_.size(), 2u);
}

TEST_F(HttpConnectionTableTest, FreesNothingWhenEveryConnectionIsAnsweringOrWithinItsGrace) {
  Open(Phase::kWorking);
  Open(Phase::kWriting);
  const uint64_t silent = Open(Phase::kReading);
  int reads = 0;
  EXPECT_FALSE(table_.FreeASlot([&](uint64_t) {
    ++reads;
    return true;
  }));
  EXPECT_EQ(reads, 1);
  EXPECT_EQ(table_.size(), 3u);
  EXPECT_NE(table_.Find(silent), nullptr);
}

TEST_F(HttpConnectionTableTest, CloseWhereClosesWhatTheVisitorPicksInAcceptOrder) {
  const uint64_t a = Open(Phase::kReading);
  const uint64_t b = Open(Phase::kWorking);
  const uint64_t c = Open(Phase::kLingering);
  std::vector<uint64_t> visited;
  table_.CloseWhere([&](HttpConnection& conn) {
    visited.push_back(conn.serial);
    return conn.phase != Phase::kWorking;
  });
  EXPECT_EQ(visited, (std::vector<uint64_t>{a, b, c}));
  EXPECT_EQ(table_.size(), 1u);
  EXPECT_NE(table_.Find(b), nullptr);
  EXPECT_TRUE(ClosedOnTheServerSide(a));
  EXPECT_TRUE(ClosedOnTheServerSide(c));
  table_.Close(b);
  table_.Close(b);  // closed already: nothing
  EXPECT_TRUE(table_.empty());
}

}  // namespace
}  // namespace dlq
