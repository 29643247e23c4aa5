// AppReporter: non-blocking datagrams to the local metrics agent; see app_reporter.h.
#include "loom/monitor/app/app_reporter.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace loom::monitor {
namespace {

int64_t WallMillis() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

std::unique_ptr<AppReporter> AppReporter::FromEnv(int rank) {
  const char* path = std::getenv(kMonitorSocketEnv);
  if (path == nullptr || *path == '\0') return nullptr;
  return std::make_unique<AppReporter>(path, rank);
}

AppReporter::AppReporter(std::string socket_path, int rank)
    : path_(std::move(socket_path)), rank_(rank) {
  if (path_.size() < sizeof(sockaddr_un::sun_path)) {
    fd_ = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  }
}

AppReporter::~AppReporter() {
  if (fd_ >= 0) ::close(fd_);
}

void AppReporter::Step(int64_t step, double step_time_s, double data_wait_s, double compute_s) {
  AppMessage m;
  m.kind = AppMessage::Kind::kStep;
  m.step = step;
  m.step_time_s = step_time_s;
  m.data_wait_s = data_wait_s;
  m.compute_s = compute_s;
  Send(std::move(m));
}

void AppReporter::Collective(std::string_view op, int64_t bytes, int64_t seq, double duration_s) {
  AppMessage m;
  m.kind = AppMessage::Kind::kCollective;
  m.op = std::string(op);
  m.bytes = bytes;
  m.seq = seq;
  m.duration_s = duration_s;
  Send(std::move(m));
}

void AppReporter::Phase(std::string_view phase) {
  AppMessage m;
  m.kind = AppMessage::Kind::kPhase;
  m.phase = std::string(phase);
  Send(std::move(m));
}

void AppReporter::Send(AppMessage m) {
  if (fd_ < 0) {
    dropped_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  if (m.rank == 0) m.rank = rank_;
  if (m.ts_ms == 0) m.ts_ms = WallMillis();
  std::string line = EncodeAppMessage(m);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path_.data(), path_.size());
  // Never blocks: the socket is non-blocking and MSG_DONTWAIT is set as well. No agent
  // (ENOENT / ECONNREFUSED) or a full receive queue (EAGAIN) drops the message.
  ssize_t n = ::sendto(fd_, line.data(), line.size(), MSG_DONTWAIT | MSG_NOSIGNAL,
                       reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  if (n == static_cast<ssize_t>(line.size())) {
    sent_.fetch_add(1, std::memory_order_relaxed);
  } else {
    dropped_.fetch_add(1, std::memory_order_relaxed);
  }
}

}  // namespace loom::monitor
