// AppReporter -> AppReceiver over a real AF_UNIX datagram socket in a temp dir.
#include <gtest/gtest.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "loom/monitor/app/app_receiver.h"
#include "loom/monitor/app/app_reporter.h"
#include "loom/monitor/app/rank_app_state.h"

namespace loom::monitor {
namespace {

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/loom_app_test_XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  std::string path() const { return path_; }

 private:
  std::string path_;
};

// Waits up to 5 s until the receiver has `n` messages (datagrams are local and immediate, the
// poll just avoids depending on scheduling).
std::vector<AppMessage> DrainAtLeast(AppReceiver& rx, size_t n) {
  std::vector<AppMessage> all;
  for (int i = 0; i < 50 && all.size() < n; ++i) {
    pollfd p{rx.fd(), POLLIN, 0};
    ::poll(&p, 1, 100);
    for (AppMessage& m : rx.Drain()) all.push_back(std::move(m));
  }
  return all;
}

TEST(AppChannelTest, ReporterToReceiver) {
  TempDir dir;
  std::string path = dir.path() + "/agent.sock";
  auto rx = AppReceiver::Bind(path);
  ASSERT_TRUE(rx.ok()) << rx.status();
  AppReporter reporter(path, 5);
  reporter.Phase("train");
  reporter.Step(10, 0.5, 0.125);
  reporter.Collective("allreduce", 4096, 17, 0.002);
  std::vector<AppMessage> got = DrainAtLeast(**rx, 3);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(reporter.sent(), 3);
  EXPECT_EQ(reporter.dropped(), 0);
  RankAppState state;
  for (const AppMessage& m : got) {
    EXPECT_EQ(m.rank, 5);
    EXPECT_GT(m.ts_ms, 0);
    state.Apply(m);
  }
  EXPECT_EQ(state.phase, "train");
  EXPECT_EQ(state.step, 10);
  EXPECT_DOUBLE_EQ(state.last_data_wait_s, 0.125);
  EXPECT_EQ(state.last_coll_seq, 17);
  EXPECT_EQ(state.coll_bytes_total, 4096);
  EXPECT_EQ((*rx)->malformed(), 0);
}

TEST(AppChannelTest, AgentAbsentDropsAndCountsWithoutError) {
  TempDir dir;
  AppReporter reporter(dir.path() + "/nobody.sock", 0);
  for (int i = 0; i < 10; ++i) reporter.Step(i, 0.1, 0.0);
  EXPECT_EQ(reporter.sent(), 0);
  EXPECT_EQ(reporter.dropped(), 10);
}

TEST(AppChannelTest, TooLongSocketPathDropsEverything) {
  AppReporter reporter("/tmp/" + std::string(200, 'x'), 0);
  reporter.Phase("eval");
  EXPECT_EQ(reporter.dropped(), 1);
  EXPECT_FALSE(AppReceiver::Bind("/tmp/" + std::string(200, 'x')).ok());
}

TEST(AppChannelTest, FullReceiveBufferDropsInsteadOfBlocking) {
  TempDir dir;
  std::string path = dir.path() + "/slow.sock";
  auto rx = AppReceiver::Bind(path);
  ASSERT_TRUE(rx.ok()) << rx.status();
  AppReporter reporter(path, 1);
  // The receiver never drains: the kernel queue fills (SO_RCVBUF / max_dgram_qlen) and the
  // reporter must drop and return rather than block.
  const int kSends = 20000;
  for (int i = 0; i < kSends; ++i) reporter.Collective("allreduce", 8, i, 0.001);
  EXPECT_EQ(reporter.sent() + reporter.dropped(), kSends);
  EXPECT_GT(reporter.dropped(), 0);
  std::vector<AppMessage> got = (*rx)->Drain();
  EXPECT_EQ(static_cast<int64_t>(got.size()), reporter.sent());
  // What arrived is in order.
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i].seq, static_cast<int64_t>(i));
}

TEST(AppChannelTest, MalformedDatagramsAreCountedNotFatal) {
  TempDir dir;
  std::string path = dir.path() + "/agent.sock";
  auto rx = AppReceiver::Bind(path);
  ASSERT_TRUE(rx.ok()) << rx.status();
  int fd = ::socket(AF_UNIX, SOCK_DGRAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, path.c_str());
  const char* bad[] = {"garbage", "v1 step rank=0", "v1 coll rank=0 ts=1 op=x bytes=z seq=1 dur=1"};
  for (const char* b : bad) {
    ASSERT_EQ(::sendto(fd, b, std::strlen(b), 0, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)),
              static_cast<ssize_t>(std::strlen(b)));
  }
  std::string oversize(4000, 'v');
  ::sendto(fd, oversize.data(), oversize.size(), 0, reinterpret_cast<sockaddr*>(&addr),
           sizeof(addr));
  ::close(fd);
  AppReporter reporter(path, 2);
  reporter.Phase("eval");
  std::vector<AppMessage> got = DrainAtLeast(**rx, 1);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].phase, "eval");
  EXPECT_EQ((*rx)->malformed(), 4);
  EXPECT_EQ((*rx)->received(), 5);
}

TEST(AppChannelTest, FromEnvIsNullWhenUnset) {
  ::unsetenv(kMonitorSocketEnv);
  EXPECT_EQ(AppReporter::FromEnv(0), nullptr);
  ::setenv(kMonitorSocketEnv, "/tmp/loom_x.sock", 1);
  auto r = AppReporter::FromEnv(4);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->socket_path(), "/tmp/loom_x.sock");
  ::unsetenv(kMonitorSocketEnv);
}

TEST(AppChannelTest, BindRefusesToReplaceARegularFile) {
  TempDir dir;
  std::string path = dir.path() + "/file";
  FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  auto rx = AppReceiver::Bind(path);
  ASSERT_FALSE(rx.ok());
  EXPECT_EQ(rx.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_TRUE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace loom::monitor
