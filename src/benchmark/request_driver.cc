#include "benchmark/request_driver.h"

#include <chrono>
#include <exception>

#include "benchmark/stream_recorder.h"

namespace lumen::benchmark {

std::string describe_client_error(httplib::Error error) {
  // httplib's own names ("Connection", "Read") do not tell a user what went wrong.
  switch (error) {
    case httplib::Error::Connection: return "could not connect to the server (is it running, on that port?)";
    case httplib::Error::ConnectionTimeout: return "timed out connecting to the server";
    case httplib::Error::Read: return "the connection broke while reading the response";
    case httplib::Error::Write: return "the connection broke while sending the request";
    case httplib::Error::SSLConnection: return "the TLS handshake failed";
    case httplib::Error::SSLServerVerification: return "the server's TLS certificate was not trusted";
    default: return httplib::to_string(error);
  }
}

RequestResult send_streaming_request(httplib::Client& client, const std::string& path, const httplib::Headers& headers,
                                     const std::string& body) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  auto since_start = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  try {
    StreamRecorder recorder;
    httplib::Request request;
    request.method = "POST";
    request.path = path;
    request.headers = headers;
    request.body = body;
    request.response_handler = [&](const httplib::Response& response) {
      recorder.on_status(response.status);
      return true;
    };
    request.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
      recorder.on_bytes(std::string_view(data, size), since_start());
      return true;
    };
    httplib::Response response;
    httplib::Error error = httplib::Error::Success;
    const bool sent = client.send(request, response, error);
    if (response.status > 0) recorder.on_status(response.status);
    return recorder.finish(since_start(), sent ? std::string() : "connection: " + describe_client_error(error));
  } catch (const std::exception& e) {
    RequestResult failed;
    failed.e2el = since_start();
    failed.error = std::string("client error: ") + e.what();
    return failed;
  }
}

}  // namespace lumen::benchmark
