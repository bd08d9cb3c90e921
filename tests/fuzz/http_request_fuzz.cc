// Arbitrary bytes as one connection's traffic through the HTTP request path: GuardedHttpServer's
// keep-alive loop and head check, httplib's parser over GuardedStream, and the body framing
// rules of http_policy.h, with a route that reads the body. The input is written to one end of
// a socket pair, which is then half-closed, so every connection ends. Anything but answers and
// a closed connection (a crash, a hang, a leak, unbounded memory) is a finding.
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <thread>

#include "http/guarded_http_server.h"
#include "http/request_body_check.h"

namespace {

class FuzzedServer : public lumen::http::GuardedHttpServer {
 public:
  FuzzedServer() : GuardedHttpServer(limits()) {
    bind_to_any_port("127.0.0.1");  // the keep-alive loop runs while the server is bound
    Post("/echo", [](const httplib::Request& request, httplib::Response& response) {
      response.set_content(std::to_string(request.body.size()), "text/plain");
    });
    Get("/health",
        [](const httplib::Request&, httplib::Response& response) { response.set_content("ok", "text/plain"); });
    set_pre_routing_handler([](const httplib::Request& request, httplib::Response& response) {
      if (auto refusal = lumen::http::body_refusal(request, kMaxBody)) {
        response.status = refusal->status;
        response.set_header("Connection", "close");
        return Server::HandlerResponse::Handled;
      }
      return Server::HandlerResponse::Unhandled;
    });
    set_logger([this](const httplib::Request& request, const httplib::Response& response) {
      response_was_written(request, response);
    });
  }
  bool serve(int socket) { return process_and_close_socket(socket); }

 private:
  static constexpr size_t kMaxBody = 4096;
  static lumen::http::ConnectionLimits limits() {
    lumen::http::ConnectionLimits limits;
    limits.read_timeout = std::chrono::milliseconds(500);
    limits.keep_alive_idle = std::chrono::milliseconds(50);
    limits.write_timeout = std::chrono::milliseconds(500);
    limits.max_body_bytes = kMaxBody;
    return limits;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static FuzzedServer* server = new FuzzedServer();
  int ends[2];
  if (socketpair(AF_UNIX, SOCK_STREAM, 0, ends) != 0) return 0;
  // The client writes on its own thread (the input may be larger than the socket's buffer) and
  // reads and drops the answers, so the server never blocks on a full send buffer.
  std::thread client([&] {
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = send(ends[0], data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    shutdown(ends[0], SHUT_WR);
    char sink[4096];
    while (recv(ends[0], sink, sizeof(sink), 0) > 0) {
    }
  });
  server->serve(ends[1]);  // hands ends[1] to the lingering closer, which closes it
  client.join();
  close(ends[0]);
  return 0;
}
