#pragma once
// Step 3 of a generation request: the body goes to one decode instance and its answer is relayed
// to the client as it arrives. A thread of the relay's own reads the answer (cpp-httplib's
// client content receiver) into a RelayQueue; the client's HTTP thread first waits for the
// answer's head, then writes the body out from the queue (the server's chunked content
// provider). While it waits it keeps checking whether the client hung up: then the exchange is
// cut, so the instance sees its connection close and aborts the request.
#include <httplib.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "proxy/relay_queue.h"
#include "proxy/upstream_call.h"
#include "proxy/upstream_pool.h"

namespace lumen::proxy {

// The decode instance's header naming the request fields it ignored, relayed to the client.
inline constexpr const char* kIgnoredFieldsHeader = "X-Lumen-Ignored-Fields";

class DecodeRelay {
 public:
  // Starts the exchange at once. The lease (the instance's in-flight count) ends with it.
  DecodeRelay(CallRegistry& calls, UpstreamPool::Lease lease, const UpstreamTimeouts& timeouts,
              httplib::Request request, size_t queue_bytes);
  // Cuts the exchange if it still runs and waits for its thread.
  ~DecodeRelay();
  DecodeRelay(const DecodeRelay&) = delete;
  DecodeRelay& operator=(const DecodeRelay&) = delete;

  enum class Start {
    Answered,     // status() and content_type() are the instance's; relay_some() gives the body
    Unreachable,  // no connection could be made: nothing was sent, the next instance may be tried
    Failed,       // the exchange broke before an answer came (or the answer made no sense)
    ClientGone,   // the client hung up while waiting
  };
  Start wait_for_answer(const std::function<bool()>& client_gone);
  int status() const { return queue_.status(); }
  // The instance's Content-Type when it is a plain header value, else application/octet-stream.
  std::string content_type() const;
  // The instance's X-Lumen-Ignored-Fields (the request fields it accepted and did not act on,
  // server/request_field_names.h) when it sent a plain one, else empty: the client's to see.
  std::string ignored_fields() const;

  // The chunked content provider's body: writes what has arrived, waiting for more. Returns
  // false to end the client's response unfinished (the client left, or the instance's answer
  // broke off: a truncated chunked body is how HTTP says so).
  bool relay_some(httplib::DataSink& sink, const std::function<bool()>& client_gone);
  // The client's response is over (the content provider's releaser): cut what still runs.
  void abandon();

 private:
  void exchange(httplib::Request request, UpstreamPool::Lease lease);

  UpstreamCall call_;
  // Written by the reader thread before queue_.open(), read by the client's thread after
  // wait_for_answer() saw the head: the queue's lock orders the two.
  std::string ignored_fields_;
  RelayQueue queue_;
  std::thread reader_;
};

}  // namespace lumen::proxy
