#include "proxy/decode_relay.h"

#include <utility>

#include "proxy/forwarded_request.h"

namespace lumen::proxy {

namespace {

// How often a waiting client thread looks at its socket for a hang-up.
constexpr std::chrono::milliseconds kClientCheck{50};

}  // namespace

DecodeRelay::DecodeRelay(CallRegistry& calls, UpstreamPool::Lease lease, const UpstreamTimeouts& timeouts,
                         httplib::Request request, size_t queue_bytes)
    : call_(calls, lease.address(), timeouts), queue_(queue_bytes) {
  reader_ = std::thread([this, request = std::move(request), lease = std::move(lease)]() mutable {
    exchange(std::move(request), std::move(lease));
  });
}

DecodeRelay::~DecodeRelay() { abandon(); }

void DecodeRelay::exchange(httplib::Request request, UpstreamPool::Lease lease) {
  request.response_handler = [this](const httplib::Response& head) {
    ignored_fields_ = head.get_header_value(kIgnoredFieldsHeader);
    return queue_.open(head.status, head.get_header_value("Content-Type"));
  };
  request.content_receiver = [this](const char* data, size_t size, uint64_t, uint64_t) {
    return queue_.push(data, size);
  };
  httplib::Response response;
  const httplib::Error error = call_.send(request, response);
  // httplib skips the response handler for a 204 (no body): its head is only known now.
  if (error == httplib::Error::Success &&
      queue_.wait_for_head(std::chrono::milliseconds(0)) != RelayQueue::State::Open) {
    ignored_fields_ = response.get_header_value(kIgnoredFieldsHeader);
    queue_.open(response.status, response.get_header_value("Content-Type"));
  }
  queue_.close(error);
  (void)lease;  // destroyed here, as the exchange ends: no longer in flight
}

DecodeRelay::Start DecodeRelay::wait_for_answer(const std::function<bool()>& client_gone) {
  for (;;) {
    switch (queue_.wait_for_head(kClientCheck)) {
      case RelayQueue::State::Open: {
        const int status = queue_.status();
        return status >= 200 && status <= 599 ? Start::Answered : Start::Failed;
      }
      case RelayQueue::State::Closed: return is_connect_failure(queue_.error()) ? Start::Unreachable : Start::Failed;
      case RelayQueue::State::Waiting:
        if (client_gone()) {
          abandon();
          return Start::ClientGone;
        }
        break;
    }
  }
}

std::string DecodeRelay::content_type() const {
  std::string type = queue_.content_type();
  return is_plain_header_value(type, 256) ? type : "application/octet-stream";
}

std::string DecodeRelay::ignored_fields() const {
  return is_plain_header_value(ignored_fields_, 4096) ? ignored_fields_ : std::string();
}

bool DecodeRelay::relay_some(httplib::DataSink& sink, const std::function<bool()>& client_gone) {
  for (;;) {
    RelayQueue::Taken taken = queue_.take(kClientCheck);
    if (!taken.bytes.empty() && !sink.write(taken.bytes.data(), taken.bytes.size())) return false;
    if (taken.ended) {
      if (!taken.complete) return false;
      sink.done();
      return true;
    }
    if (!taken.bytes.empty()) return true;
    if (client_gone()) return false;
  }
}

void DecodeRelay::abandon() {
  queue_.abandon();
  if (!reader_.joinable()) return;
  // Cut the exchange until it has ended: a first cancel() can come before the socket exists.
  while (!queue_.wait_closed(std::chrono::milliseconds(0))) {
    call_.cancel();
    queue_.wait_closed(std::chrono::milliseconds(20));
  }
  reader_.join();
}

}  // namespace lumen::proxy
