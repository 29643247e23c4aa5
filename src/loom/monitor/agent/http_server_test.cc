// MetricsHttpServer on a real loopback socket.
#include "loom/monitor/agent/http_server.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace loom::monitor {
namespace {

int Connect(int port) {
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    ::close(fd);
    return -1;
  }
  timeval tv{5, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

std::string Request(int port, const std::string& req) {
  int fd = Connect(port);
  if (fd < 0) return "connect failed";
  ::send(fd, req.data(), req.size(), MSG_NOSIGNAL);
  std::string resp;
  char buf[4096];
  ssize_t n;
  while ((n = ::recv(fd, buf, sizeof(buf), 0)) > 0) resp.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return resp;
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions o;
    o.port = 0;
    o.io_timeout_ms = 500;
    o.max_request_bytes = 1024;
    server_ = std::make_unique<MetricsHttpServer>(o, [this] {
      ++calls_;
      return std::string("# HELP loom_x_ratio x\n# TYPE loom_x_ratio gauge\nloom_x_ratio 1\n");
    });
    ASSERT_TRUE(server_->Start().ok());
    ASSERT_GT(server_->port(), 0);
  }
  std::atomic<int> calls_{0};
  std::unique_ptr<MetricsHttpServer> server_;
};

TEST_F(HttpServerTest, GetMetricsReturnsTheBody) {
  std::string resp =
      Request(server_->port(), "GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n\r\n");
  EXPECT_EQ(resp.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << resp;
  EXPECT_NE(resp.find("Content-Type: text/plain; version=0.0.4"), std::string::npos);
  EXPECT_NE(resp.find("Content-Length: 63\r\n"), std::string::npos) << resp;
  EXPECT_NE(resp.find("\r\n\r\n# HELP loom_x_ratio x\n"), std::string::npos);
  EXPECT_EQ(calls_.load(), 1);
  // Query strings are ignored.
  EXPECT_EQ(Request(server_->port(), "GET /metrics?x=1 HTTP/1.0\r\n\r\n").rfind("HTTP/1.1 200", 0),
            0u);
}

TEST_F(HttpServerTest, OtherPathsMethodsAndGarbage) {
  EXPECT_EQ(Request(server_->port(), "GET / HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(Request(server_->port(), "GET /metricsx HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0),
            0u);
  EXPECT_EQ(Request(server_->port(), "POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0),
            0u);
  EXPECT_EQ(Request(server_->port(), "hello\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  std::string huge = "GET /metrics HTTP/1.1\r\nX: " + std::string(5000, 'a') + "\r\n\r\n";
  EXPECT_EQ(Request(server_->port(), huge).rfind("HTTP/1.1 431", 0), 0u);
  EXPECT_EQ(calls_.load(), 0);
}

TEST_F(HttpServerTest, SilentClientIsDroppedAndOthersAreServedAfterwards) {
  int idle = Connect(server_->port());  // sends nothing
  ASSERT_GE(idle, 0);
  std::string resp = Request(server_->port(), "GET /metrics HTTP/1.1\r\n\r\n");
  EXPECT_EQ(resp.rfind("HTTP/1.1 200", 0), 0u);
  char c;
  EXPECT_EQ(::recv(idle, &c, 1, 0), 0);  // closed by the server after its io timeout
  ::close(idle);
}

TEST(HttpServerListenTest, ParseListenAddress) {
  Result<HttpServerOptions> a = ParseListenAddress("127.0.0.1:9400");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, 9400);
  EXPECT_EQ(ParseListenAddress(":9100")->host, "0.0.0.0");
  EXPECT_FALSE(ParseListenAddress("9400").ok());
  EXPECT_FALSE(ParseListenAddress("127.0.0.1:99999").ok());
  EXPECT_FALSE(ParseListenAddress("localhost:9400").ok());
}

TEST(HttpServerListenTest, PortInUseIsAnErrorNamingTheAddress) {
  MetricsHttpServer a({.host = "127.0.0.1", .port = 0}, [] { return std::string(); });
  ASSERT_TRUE(a.Start().ok());
  MetricsHttpServer b({.host = "127.0.0.1", .port = a.port()}, [] { return std::string(); });
  Status s = b.Start();
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("127.0.0.1:" + std::to_string(a.port())), std::string::npos) << s;
}

}  // namespace
}  // namespace loom::monitor
