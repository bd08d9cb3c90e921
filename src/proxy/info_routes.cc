// GET /v1/models, /health and /metrics.
#include <optional>
#include <string>
#include <vector>

#include "proxy/forwarded_request.h"
#include "proxy/openai_error.h"
#include "proxy/proxy_routes.h"

namespace lumen::proxy {

namespace {

// A model list is a few hundred bytes; anything near this is not one.
constexpr size_t kMaxModelsBytes = size_t{1} << 20;
constexpr size_t kMaxHealthBytes = 64 * 1024;

// A health check must answer quickly: a load balancer waits on it.
constexpr UpstreamTimeouts kHealthTimeouts{std::chrono::milliseconds(1'000), std::chrono::milliseconds(2'000),
                                           std::chrono::milliseconds(2'000)};

UpstreamTimeouts models_timeouts(const ProxyContext& proxy) {
  const auto timeout = std::min(proxy.upstream_timeout(), std::chrono::milliseconds(30'000));
  return {std::min(timeout, std::chrono::milliseconds(5'000)), timeout, timeout};
}

}  // namespace

void serve_models(ProxyContext& proxy, const httplib::Request& request, httplib::Response& response) {
  const ForwardedHeaders headers = forwarded_headers(request, response);
  std::vector<size_t> tried;
  while (std::optional<UpstreamPool::Lease> lease = proxy.decode.pick(tried)) {
    const size_t index = lease->index();
    UpstreamCall call(proxy.calls, lease->address(), models_timeouts(proxy));
    httplib::Request get = upstream_get("/v1/models", headers);
    httplib::Response answer;
    const httplib::Error error = call.fetch(get, answer, kMaxModelsBytes);
    if (error == httplib::Error::Success && answer.status >= 200 && answer.status <= 599) {
      if (answer.status >= 500) proxy.decode.count_failure(index);
      const std::string type = answer.get_header_value("Content-Type");
      response.status = answer.status;
      response.set_content(answer.body, is_plain_header_value(type, 256) ? type : "application/octet-stream");
      return;
    }
    proxy.decode.count_failure(index);
    if (!is_connect_failure(error)) {
      answer_error(response, 502, "the decode instance failed to list its models", "upstream_failed");
      return;
    }
    tried.push_back(index);
  }
  answer_error(response, 503, "no decode instance could be reached", "decode_unavailable");
}

void serve_health(ProxyContext& proxy, httplib::Response& response) {
  if (proxy.draining) {
    answer_error(response, 503, "the proxy is shutting down", "shutting_down");
    return;
  }
  // One healthy decode instance is enough to answer requests (without a prefill instance the
  // decode computes prompts itself). Checked in turn; one that is down fails fast.
  for (size_t index = 0; index < proxy.decode.size(); ++index) {
    UpstreamCall call(proxy.calls, proxy.decode.address(index), kHealthTimeouts);
    ForwardedHeaders headers;
    headers.request_id = new_request_id();
    httplib::Request probe = upstream_get("/health", headers);
    httplib::Response answer;
    if (call.fetch(probe, answer, kMaxHealthBytes) == httplib::Error::Success && answer.status == 200) {
      response.set_content(R"({"status":"ok"})", "application/json");
      return;
    }
  }
  answer_error(response, 503, "no decode instance is healthy", "no_healthy_decode");
}

void serve_metrics(const ProxyContext& proxy, httplib::Response& response) {
  response.set_content(proxy.metrics.render(proxy.prefill, proxy.decode), "text/plain; version=0.0.4; charset=utf-8");
}

}  // namespace lumen::proxy
