// POST /v1/completions and /v1/chat/completions: the prefill step, then the decode relay.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "http/guarded_http_server.h"
#include "http/peer_hang_up.h"
#include "proxy/decode_relay.h"
#include "proxy/forwarded_request.h"
#include "proxy/openai_error.h"
#include "proxy/prefill_step.h"
#include "proxy/proxy_routes.h"
#include "proxy/session_affinity.h"

namespace lumen::proxy {

namespace {

// How much of a decode's answer may wait for a slow client before the decode is held back.
constexpr size_t kRelayQueueBytes = size_t{1} << 20;

class CountedInFlight {
 public:
  explicit CountedInFlight(std::atomic<int64_t>& count) : count_(count) { count_ += 1; }
  ~CountedInFlight() { count_ -= 1; }
  CountedInFlight(const CountedInFlight&) = delete;
  CountedInFlight& operator=(const CountedInFlight&) = delete;

 private:
  std::atomic<int64_t>& count_;
};

// Whether the client of the connection this thread serves has hung up (never, outside one).
std::function<bool()> client_hang_up_check() {
  const int socket = http::GuardedHttpServer::current_socket();
  return [socket] { return socket >= 0 && http::peer_hung_up(socket); };
}

void answer_client_gone(httplib::Response& response) {
  // Nobody reads this; it only ends the exchange cleanly on the proxy's side.
  answer_error(response, 503, "the client hung up", "client_closed");
  response.set_header("Connection", "close");
}

// Step 3: the first decode instance that can be connected to, relayed to the client.
void relay_to_decode(ProxyContext& proxy, std::string_view path, const std::string& body,
                     const ForwardedHeaders& headers, std::optional<uint64_t> session,
                     const std::function<bool()>& client_gone, const std::shared_ptr<CountedInFlight>& counted,
                     httplib::Response& response) {
  std::vector<size_t> tried;
  while (std::optional<UpstreamPool::Lease> lease = proxy.decode.pick(tried, session)) {
    const size_t index = lease->index();
    auto relay = std::make_shared<DecodeRelay>(proxy.calls, std::move(*lease), proxy.generation_timeouts(),
                                               upstream_post(path, body, headers), kRelayQueueBytes);
    switch (relay->wait_for_answer(client_gone)) {
      case DecodeRelay::Start::Answered:
        if (relay->status() >= 500) proxy.decode.count_failure(index);
        response.status = relay->status();
        if (const std::string ignored = relay->ignored_fields(); !ignored.empty()) {
          response.set_header(kIgnoredFieldsHeader, ignored);
        }
        response.set_chunked_content_provider(
            relay->content_type(),
            // The request stays in flight (for shutdown's grace) until its relay is over.
            [relay, client_gone, counted](size_t, httplib::DataSink& sink) {
              return relay->relay_some(sink, client_gone);
            },
            [relay](bool) { relay->abandon(); });
        return;
      case DecodeRelay::Start::Unreachable:
        proxy.decode.count_failure(index);
        tried.push_back(index);
        break;
      case DecodeRelay::Start::Failed:
        // Not retried: the instance may have started on the request. Which instance, and how it
        // failed, is the operator's business (the metrics), not the client's.
        proxy.decode.count_failure(index);
        answer_error(response, 502, "the decode instance failed before answering", "upstream_failed");
        return;
      case DecodeRelay::Start::ClientGone: answer_client_gone(response); return;
    }
  }
  answer_error(response, 503, "no decode instance could be reached", "decode_unavailable");
}

}  // namespace

void serve_generation(ProxyContext& proxy, Route route, const httplib::Request& request, httplib::Response& response) {
  if (proxy.draining) {
    answer_error(response, 503, "the proxy is shutting down", "shutting_down");
    return;
  }
  const auto counted = std::make_shared<CountedInFlight>(proxy.generations_in_flight);
  const std::string_view path = route_path(route);  // the canonical path, never the client's spelling
  const std::function<bool()> client_gone = client_hang_up_check();

  ForwardedHeaders headers = forwarded_headers(request, response);

  // A conversation's turns go to the same instances, whose prefix caches hold its earlier turns.
  const std::optional<uint64_t> session = session_key(request.get_header_value(kSessionHeader));
  const PrefillStep step{proxy.prefill, proxy.calls, proxy.generation_timeouts(), proxy.upstream_timeout(), session};
  PrefillResult prefill = run_prefill(step, path, request.body, headers, client_gone);
  proxy.metrics.observe_prefill_seconds(prefill.seconds);
  if (prefill.client_gone) {
    answer_client_gone(response);
    return;
  }
  if (!prefill.kv_transfer) proxy.metrics.count_prefill_fallback();
  headers.kv_transfer = std::move(prefill.kv_transfer);
  relay_to_decode(proxy, path, request.body, headers, session, client_gone, counted, response);
}

}  // namespace lumen::proxy
