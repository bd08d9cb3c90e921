#pragma once
// One HTTP exchange with an instance, which another thread may cut short at any moment: the
// client hung up, the prefill step ran past its deadline, or the proxy is shutting down. Cutting
// it closes the connection, which is how an instance learns to abort the request.
//
// cpp-httplib's Client::stop() shuts the socket down while a request is under way, but does
// nothing before the socket exists (it may still be connecting), so a canceller repeats cancel()
// until the exchange has returned (send_watched does). Every live call is listed in a
// CallRegistry, so that shutdown can cut them all.
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <mutex>
#include <set>

#include "proxy/upstream_address.h"

namespace lumen::proxy {

struct UpstreamTimeouts {
  std::chrono::milliseconds connect;
  std::chrono::milliseconds read;  // each wait for bytes, not the whole answer
  std::chrono::milliseconds write;
};

class CallRegistry;

class UpstreamCall {
 public:
  UpstreamCall(CallRegistry& registry, const UpstreamAddress& address, const UpstreamTimeouts& timeouts);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  // Sends on the calling thread and returns httplib's error: Success when the exchange
  // completed, Canceled when cancel() cut it (whatever httplib saw then).
  httplib::Error send(httplib::Request& request, httplib::Response& response);
  // Like send(), with the answer's body kept in response.body up to `max_body_bytes` (a
  // longer one ends the exchange: Canceled). For the small answers the proxy reads itself.
  httplib::Error fetch(httplib::Request& request, httplib::Response& response, size_t max_body_bytes);
  // From any thread, any number of times.
  void cancel();
  bool cancelled() const { return cancelled_; }

 private:
  CallRegistry& registry_;
  httplib::Client client_;
  std::atomic<bool> cancelled_{false};
};

// Sends `request` on a helper thread while the calling one checks `give_up` every few
// milliseconds, cancelling the call once it says so. Returns the call's error.
httplib::Error send_watched(UpstreamCall& call, httplib::Request& request, httplib::Response& response,
                            const std::function<bool()>& give_up);

// Whether `error` means no connection was made (so nothing was sent, and another instance may be
// tried with no risk of running the request twice).
bool is_connect_failure(httplib::Error error);

class CallRegistry {
 public:
  CallRegistry() = default;
  CallRegistry(const CallRegistry&) = delete;
  CallRegistry& operator=(const CallRegistry&) = delete;

  // Cancels every live call; calls made from now on start cancelled.
  void cancel_all();
  size_t live_calls() const;

 private:
  friend class UpstreamCall;
  // Returns whether the call must start cancelled.
  bool add(UpstreamCall* call);
  void remove(UpstreamCall* call);

  mutable std::mutex mutex_;
  std::set<UpstreamCall*> calls_;
  bool closed_ = false;
};

}  // namespace lumen::proxy
