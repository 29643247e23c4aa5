// The communicator's CollectiveObserver on 2 in-process ranks sees every operation with its op,
// size and sequence number; chained to AppReporter -> AppReceiver it gives the agent each rank's
// last collective (what the trainer does in loom/train/trainer.cc).
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>

#include <filesystem>
#include <vector>

#include "loom/base/mutex.h"
#include "loom/comm/communicator.h"
#include "loom/comm/inproc/inproc_transport.h"
#include "loom/comm/testing/run_ranks.h"
#include "loom/monitor/app/app_receiver.h"
#include "loom/monitor/app/app_reporter.h"
#include "loom/monitor/app/rank_app_state.h"

namespace loom::monitor {
namespace {

struct Seen {
  std::string op;
  int64_t bytes;
  int64_t seq;
  bool ok;
};

class RecordingObserver : public comm::CollectiveObserver {
 public:
  void OnCollective(const char* op, int64_t bytes, int64_t seq, double seconds, bool ok) override {
    EXPECT_GE(seconds, 0);
    seen.push_back({op, bytes, seq, ok});
  }
  std::vector<Seen> seen;
};

// Forwards to the app channel, as the trainer's adapter does.
class ReportingObserver : public comm::CollectiveObserver {
 public:
  explicit ReportingObserver(AppReporter* r) : r_(r) {}
  void OnCollective(const char* op, int64_t bytes, int64_t seq, double seconds, bool ok) override {
    if (ok) r_->Collective(op, bytes, seq, seconds);
  }

 private:
  AppReporter* r_;
};

// Issues the same sequence of operations on every rank.
void Workload(comm::Communicator& c) {
  std::vector<float> grad(1000, 1.0f);
  std::vector<float> gathered(2 * 10), mine(10, 2.0f);
  ASSERT_TRUE(c.AllReduce(TensorView::Of(grad.data(), 1000), comm::ReduceOp::kSum).ok());
  ASSERT_TRUE(c.Broadcast(TensorView::Of(grad.data(), 16), 0).ok());
  ASSERT_TRUE(c.Barrier().ok());
  TensorView in = TensorView::Of(mine.data(), 10);
  ASSERT_TRUE(c.AllGather(in, TensorView::Of(gathered.data(), 20)).ok());
  // A failed argument check is still an operation with a sequence number.
  EXPECT_FALSE(c.AllGather(in, TensorView::Of(gathered.data(), 7)).ok());
  ASSERT_TRUE(c.AllReduce(TensorView::Of(grad.data(), 8), comm::ReduceOp::kMax).ok());
}

TEST(CommObserverTest, SeesOpsBytesAndSequenceNumbersOnEveryRank) {
  auto comms = comm::MakeInProcCommunicators(2);
  std::vector<RecordingObserver> obs(2);
  comms[0]->SetObserver(&obs[0]);
  comms[1]->SetObserver(&obs[1]);
  comm::testing::RunRanks(2, [&](int r) { Workload(*comms[r]); });
  const std::vector<Seen> want = {{"allreduce", 4000, 0, true}, {"broadcast", 64, 1, true},
                                  {"barrier", 0, 2, true},      {"allgather", 80, 3, true},
                                  {"allgather", 28, 4, false},  {"allreduce", 32, 5, true}};
  for (int r = 0; r < 2; ++r) {
    ASSERT_EQ(obs[r].seen.size(), want.size()) << "rank " << r;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(obs[r].seen[i].op, want[i].op) << "rank " << r << " op " << i;
      EXPECT_EQ(obs[r].seen[i].bytes, want[i].bytes) << "rank " << r << " op " << i;
      EXPECT_EQ(obs[r].seen[i].seq, want[i].seq) << "rank " << r << " op " << i;
      EXPECT_EQ(obs[r].seen[i].ok, want[i].ok) << "rank " << r << " op " << i;
    }
    EXPECT_EQ(comms[r]->next_seq(), 6);
  }
  // Unset: no more reports, but the sequence keeps counting so numbers stay aligned.
  comms[0]->SetObserver(nullptr);
  comms[1]->SetObserver(nullptr);
  comm::testing::RunRanks(2, [&](int r) { ASSERT_TRUE(comms[r]->Barrier().ok()); });
  EXPECT_EQ(obs[0].seen.size(), want.size());
  EXPECT_EQ(comms[0]->next_seq(), 7);
}

TEST(CommObserverTest, ChainedToTheAppChannelGivesEachRanksLastCollective) {
  char tmpl[] = "/tmp/loom_obs_test_XXXXXX";
  std::string dir = ::mkdtemp(tmpl);
  std::string path = dir + "/agent.sock";
  auto rx = AppReceiver::Bind(path);
  ASSERT_TRUE(rx.ok()) << rx.status();
  auto comms = comm::MakeInProcCommunicators(2);
  AppReporter rep0(path, 0), rep1(path, 1);
  ReportingObserver o0(&rep0), o1(&rep1);
  comms[0]->SetObserver(&o0);
  comms[1]->SetObserver(&o1);
  comm::testing::RunRanks(2, [&](int r) { Workload(*comms[r]); });
  std::map<int, RankAppState> state;
  for (int i = 0; i < 50 && state[0].coll_count + state[1].coll_count < 10; ++i) {
    pollfd p{(*rx)->fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    for (const AppMessage& m : (*rx)->Drain()) state[m.rank].Apply(m);
  }
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(state[r].coll_count, 5) << r;  // the failed allgather is not reported
    EXPECT_EQ(state[r].last_coll_seq, 5);
    EXPECT_EQ(state[r].last_coll_op, "allreduce");
    EXPECT_EQ(state[r].coll_bytes_total, 4000 + 64 + 0 + 80 + 32);
  }
  rx->reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace loom::monitor
