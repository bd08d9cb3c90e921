#pragma once
// `lumen serve --role prefill|decode` (disaggregated prefill and decode): what the routes do
// differently in each role. A prefill instance computes only the prompt of each generation
// request (answering as for max_tokens 1), keeps its K/V in the engine, and says in the
// X-Lumen-KV-Transfer response header where and under which id a decode instance can fetch it.
// A decode instance given that header (by the proxy in front, `--role proxy`) fetches the K/V
// from one of the prefill instances it was told to trust, imports it into its prefix cache and
// then runs the request as usual, so the request adopts the prompt instead of computing it. Any
// failure on the way (the prefill instance gone, the K/V pushed out, a timeout) only means the
// decode instance computes the prompt itself: the answer is the same either way.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kv_transfer/transfer_key.h"
#include "server/sampling_request.h"

namespace lumen::server {

struct ServerContext;

enum class ServeRole { Both, Prefill, Decode };

inline constexpr const char* kKvTransferHeader = "X-Lumen-KV-Transfer";

struct KvHandoffOptions {
  ServeRole role = ServeRole::Both;
  // Prefill: the KV-transfer endpoint decode instances connect to ("tcp://10.0.0.5:5600"; it is
  // also where this instance listens).
  std::string advertised_endpoint;
  // Decode: the prefill instances' endpoints it may fetch from; a header naming another is
  // ignored, so a client cannot make it connect anywhere.
  std::vector<std::string> sources;
  double fetch_timeout_s = 10.0;
  // Prefill and decode: the deployment's KV-transfer key (kv_transfer/transfer_key.h); the port
  // and the fetches are then CURVE, and only key holders reach the port.
  std::optional<kv_transfer::TransferKey> key;
  // Decode: whether imported K/V joins the shared prefix cache (other requests of the same
  // tenant may adopt it). Off by default: imported pages are only checked for non-finite or
  // never-computed values, not recomputed, so they stay the importing request's own.
  bool share_imported = false;
};

// Prefill: the generation options of a request reduced to computing its prompt once (one
// choice, greedy, one token, nothing streamed or constrained): what it costs does not depend on
// what the client asked to generate.
GenerationOptions prompt_only(const GenerationOptions& options);

// Prefill: the header value naming request_id's K/V, "<endpoint>#<request id>".
std::string kv_transfer_header(const KvHandoffOptions& options, uint64_t request_id);

struct KvTransferSource {
  std::string endpoint;
  uint64_t request_id = 0;
};
// Decode: the source a header names, when it is well formed and one of options.sources.
std::optional<KvTransferSource> parse_kv_transfer_header(const KvHandoffOptions& options, std::string_view value);

// Decode: fetches and imports the prompt's K/V (before the request is submitted). Never throws:
// every failure is counted in the metrics and leaves the request to compute its prompt.
// Returns the cache salt the request must run under to adopt what was imported: `cache_salt`
// itself with share_imported (or when nothing was imported), else a salt of its own, so no other
// request ever adopts the imported blocks.
uint64_t receive_prompt_kv(ServerContext& context, const KvTransferSource& source, const std::vector<int32_t>& prompt,
                           uint64_t cache_salt);

}  // namespace lumen::server
