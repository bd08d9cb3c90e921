#pragma once
// A small stand-in for a Lumen instance behind the proxy, on 127.0.0.1 and a free port: it
// records what each request brought and answers as the test scripts it. Its /health answers
// health_status (200 unless set), /v1/models a fixed list.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace lumen::proxy::testing {

struct Received {
  std::string path;
  std::string body;
  httplib::Headers headers;
};

class FakeInstance {
 public:
  using Answer = std::function<void(const httplib::Request&, httplib::Response&)>;

  explicit FakeInstance(Answer answer) : answer_(std::move(answer)) {
    for (const char* path : {"/v1/completions", "/v1/chat/completions"}) {
      server_.Post(path, [this](const httplib::Request& request, httplib::Response& response) {
        {
          std::lock_guard<std::mutex> lock(mutex_);
          received_.push_back({request.path, request.body, request.headers});
        }
        answer_(request, response);
      });
    }
    server_.Get("/health", [this](const httplib::Request&, httplib::Response& response) {
      response.status = health_status;
      response.set_content(R"({"status":"?"})", "application/json");
    });
    server_.Get("/v1/models", [](const httplib::Request&, httplib::Response& response) {
      response.set_content(R"({"object":"list","data":[{"id":"fake-model","object":"model"}]})", "application/json");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // stop() does nothing until the server runs: wait for it, so the destructor cannot hang.
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeInstance() {
    server_.stop();
    thread_.join();
  }
  FakeInstance(const FakeInstance&) = delete;
  FakeInstance& operator=(const FakeInstance&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  std::vector<Received> received() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return received_;
  }

  std::atomic<int> health_status{200};

 private:
  Answer answer_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<Received> received_;
};

// An address nothing answers on: a socket bound to a port but never listening, so connecting to
// it is refused (and no other test can take the port while it is held).
class RefusingAddress {
 public:
  RefusingAddress() : fd_(::socket(AF_INET, SOCK_STREAM, 0)) {
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    address.sin_port = 0;
    ::bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof(address));
    socklen_t length = sizeof(address);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~RefusingAddress() { ::close(fd_); }
  RefusingAddress(const RefusingAddress&) = delete;
  RefusingAddress& operator=(const RefusingAddress&) = delete;

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_;
  int port_ = 0;
};

}  // namespace lumen::proxy::testing
