#pragma once
// Step 1 of a generation request: the body goes to a prefill instance, which computes the prompt
// (it answers as if max_tokens were 1), keeps its K/V, and says where to fetch them in an
// X-Lumen-KV-Transfer header. The proxy reads that answer whole and drops its body: closing
// early could look like a hang-up to the instance, which would then drop the K/V.
//
// Whatever goes wrong here is not the client's problem: without the header the decode instance
// computes the prompt itself and the client gets the same answer (a bad request gets the decode
// instance's own 400). So the result is the header's value, or nothing and whose fault that is.
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "proxy/forwarded_request.h"
#include "proxy/upstream_call.h"
#include "proxy/upstream_pool.h"

namespace lumen::proxy {

struct PrefillResult {
  std::optional<std::string> kv_transfer;  // nothing: go on without it
  bool instance_failed = false;            // the instance's fault (unreachable, 5xx...), not the request's
  bool client_gone = false;                // the client hung up meanwhile; there is nothing left to do
  double seconds = 0;                      // how long the step took
};

struct PrefillStep {
  UpstreamPool& pool;
  CallRegistry& calls;
  UpstreamTimeouts timeouts;
  std::chrono::milliseconds deadline;  // for the whole exchange
  std::optional<uint64_t> session;     // the request's session key (session_affinity.h), if any
};

// Runs the step on one instance of the pool, giving up when `client_gone()` says so.
PrefillResult run_prefill(const PrefillStep& step, std::string_view path, const std::string& body,
                          const ForwardedHeaders& headers, const std::function<bool()>& client_gone);

}  // namespace lumen::proxy
