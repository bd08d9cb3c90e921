#pragma once
// What every route shares: the engine and its model, the served name and limits, metrics,
// admission, and the watcher of vanished clients.
#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "lumen/engine.h"
#include "lumen/model.h"
#include "server/admission.h"
#include "server/disconnect_watcher.h"
#include "server/kv_handoff.h"
#include "server/metrics.h"
#include "server/sampling_request.h"

namespace lumen::server {

struct ServerContext {
  ServerContext(Engine& e, Model m, std::string name,
                ServingLimits serving_limits, int64_t max_in_flight, int64_t max_in_flight_per_client = 0)
      : engine(e),
        model(std::move(m)),
        model_name(std::move(name)),
        limits(serving_limits),
        admission(max_in_flight, max_in_flight_per_client),
        watcher([this](uint64_t id) { engine.abort(id); }) {}

  Engine& engine;
  const Model model;  // without a chat template, chat is a 400
  std::string model_name;
  ServingLimits limits;
  ServerMetrics metrics;
  Admission admission;
  // Set when shutdown's grace period ran out and in-flight requests were aborted: their
  // clients get "the server is shutting down" rather than a bare abort.
  std::atomic<bool> shutdown_aborted{false};
  // With API keys, each key is a tenant: its requests get their own prefix-cache salt (tenant
  // isolation) and their own admission share (client_id.h); without, the peer address is.
  bool salt_by_api_key = false;
  // Chat replies of a reasoning model split into reasoning_content and content unless a
  // request says otherwise (--reasoning-format none turns it off; server/reasoning_split.h).
  bool split_reasoning = true;
  // Disaggregated prefill and decode: this instance's role (server/kv_handoff.h).
  KvHandoffOptions kv_handoff;
  DisconnectWatcher watcher;  // last: its thread calls into the members above
};

}  // namespace lumen::server
