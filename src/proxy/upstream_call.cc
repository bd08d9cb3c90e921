#include "proxy/upstream_call.h"

#include <condition_variable>
#include <thread>

namespace lumen::proxy {

namespace {

std::pair<time_t, time_t> seconds_and_micros(std::chrono::milliseconds duration) {
  const auto micros = std::chrono::duration_cast<std::chrono::microseconds>(duration).count();
  return {static_cast<time_t>(micros / 1'000'000), static_cast<time_t>(micros % 1'000'000)};
}

}  // namespace

UpstreamCall::UpstreamCall(CallRegistry& registry, const UpstreamAddress& address, const UpstreamTimeouts& timeouts)
    : registry_(registry), client_(address.host, address.port) {
  const auto [connect_s, connect_us] = seconds_and_micros(timeouts.connect);
  const auto [read_s, read_us] = seconds_and_micros(timeouts.read);
  const auto [write_s, write_us] = seconds_and_micros(timeouts.write);
  client_.set_connection_timeout(connect_s, connect_us);
  client_.set_read_timeout(read_s, read_us);
  client_.set_write_timeout(write_s, write_us);
  client_.set_keep_alive(false);       // one exchange per call: closing it is how to cancel it
  client_.set_follow_location(false);  // an instance's redirect is relayed, never followed
  client_.set_decompress(false);       // nothing asks for a coding; never inflate what arrives
  if (registry_.add(this)) cancelled_ = true;
}

UpstreamCall::~UpstreamCall() { registry_.remove(this); }

httplib::Error UpstreamCall::send(httplib::Request& request, httplib::Response& response) {
  if (cancelled_) return httplib::Error::Canceled;
  httplib::Error error = httplib::Error::Success;
  const bool sent = client_.send(request, response, error);
  if (cancelled_ && (!sent || error != httplib::Error::Success)) return httplib::Error::Canceled;
  return sent ? httplib::Error::Success : error;
}

httplib::Error UpstreamCall::fetch(httplib::Request& request, httplib::Response& response, size_t max_body_bytes) {
  std::string body;
  request.content_receiver = [&body, max_body_bytes](const char* data, size_t size, uint64_t, uint64_t) {
    if (body.size() + size > max_body_bytes) return false;
    body.append(data, size);
    return true;
  };
  const httplib::Error error = send(request, response);
  request.content_receiver = nullptr;  // it refers to this frame's `body`
  response.body = std::move(body);
  return error;
}

void UpstreamCall::cancel() {
  cancelled_ = true;
  client_.stop();
}

httplib::Error send_watched(UpstreamCall& call, httplib::Request& request, httplib::Response& response,
                            const std::function<bool()>& give_up) {
  std::mutex mutex;
  std::condition_variable finished;
  bool done = false;
  httplib::Error error = httplib::Error::Success;
  std::thread sender([&] {
    const httplib::Error result = call.send(request, response);
    std::lock_guard<std::mutex> lock(mutex);
    error = result;
    done = true;
    finished.notify_all();
  });
  bool giving_up = false;
  std::unique_lock<std::mutex> lock(mutex);
  while (!finished.wait_for(lock, std::chrono::milliseconds(20), [&] { return done; })) {
    lock.unlock();
    // Once given up, cancel again on every turn: the first may have come before the socket.
    if (giving_up || give_up()) {
      giving_up = true;
      call.cancel();
    }
    lock.lock();
  }
  lock.unlock();
  sender.join();
  return error;
}

bool is_connect_failure(httplib::Error error) {
  return error == httplib::Error::Connection || error == httplib::Error::ConnectionTimeout ||
         error == httplib::Error::BindIPAddress;
}

void CallRegistry::cancel_all() {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  for (UpstreamCall* call : calls_) call->cancel();
}

size_t CallRegistry::live_calls() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return calls_.size();
}

bool CallRegistry::add(UpstreamCall* call) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.insert(call);
  return closed_;
}

void CallRegistry::remove(UpstreamCall* call) {
  std::lock_guard<std::mutex> lock(mutex_);
  calls_.erase(call);
}

}  // namespace lumen::proxy
