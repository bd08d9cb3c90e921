#include "proxy/prefill_step.h"

#include <atomic>

namespace lumen::proxy {

PrefillResult run_prefill(const PrefillStep& step, std::string_view path, const std::string& body,
                          const ForwardedHeaders& headers, const std::function<bool()>& client_gone) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  PrefillResult result;
  std::optional<UpstreamPool::Lease> lease = step.pool.pick({}, step.session);
  if (!lease) return result;  // the pool is never empty; this only keeps a broken invariant from crashing
  UpstreamCall call(step.calls, lease->address(), step.timeouts);
  httplib::Request request = upstream_post(path, body, headers);
  // The answer's body is not needed, only read to its end.
  request.content_receiver = [](const char*, size_t, uint64_t, uint64_t) { return true; };
  httplib::Response response;
  std::atomic<bool> timed_out{false};
  std::atomic<bool> hung_up{false};
  const Clock::time_point deadline = started + step.deadline;
  const httplib::Error error = send_watched(call, request, response, [&] {
    if (client_gone()) hung_up = true;
    if (Clock::now() >= deadline) timed_out = true;
    return hung_up || timed_out;
  });
  result.seconds = std::chrono::duration<double>(Clock::now() - started).count();

  if (hung_up) {
    result.client_gone = true;
  } else if (timed_out || error != httplib::Error::Success) {
    result.instance_failed = true;
  } else if (response.status != 200) {
    // A 4xx is most likely the request's own fault, which the decode instance will report.
    result.instance_failed = response.status >= 500;
  } else if (std::string value = response.get_header_value(std::string(kKvTransferHeader));
             response.get_header_value_count(std::string(kKvTransferHeader)) == 1 && is_plain_header_value(value)) {
    result.kv_transfer = std::move(value);
  } else {
    result.instance_failed = true;  // not a prefill instance, or a confused one
  }
  if (result.instance_failed) step.pool.count_failure(lease->index());
  return result;
}

}  // namespace lumen::proxy
