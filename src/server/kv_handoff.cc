#include "server/kv_handoff.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <future>
#include <random>

#include "kv_transfer/kv_transfer_client.h"
#include "lumen/cache_salt.h"
#include "lumen/error.h"
#include "lumen/prompt_kv_exchange.h"
#include "server/server_context.h"

namespace lumen::server {

GenerationOptions prompt_only(const GenerationOptions& options) {
  GenerationOptions only;
  only.params.temperature = 0.0f;
  only.params.max_tokens = 1;
  only.max_tokens_given = true;
  only.cache_salt = options.cache_salt;
  return only;
}

std::string kv_transfer_header(const KvHandoffOptions& options, uint64_t request_id) {
  return fmt::format("{}#{}", options.advertised_endpoint, request_id);
}

std::optional<KvTransferSource> parse_kv_transfer_header(const KvHandoffOptions& options, std::string_view value) {
  const size_t hash = value.rfind('#');
  if (hash == std::string_view::npos) return std::nullopt;
  const std::string_view endpoint = value.substr(0, hash);
  const std::string_view id = value.substr(hash + 1);
  KvTransferSource source;
  const auto [end, error] = std::from_chars(id.data(), id.data() + id.size(), source.request_id);
  if (id.empty() || error != std::errc() || end != id.data() + id.size()) return std::nullopt;
  if (std::ranges::find(options.sources, endpoint) == options.sources.end()) return std::nullopt;
  source.endpoint = endpoint;
  return source;
}

namespace {
// A salt no other request has: a process-random start and a counter, mixed in.
uint64_t private_cache_salt(uint64_t cache_salt) {
  static const uint64_t start = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  static std::atomic<uint64_t> counter{0};
  return combine_cache_salts(cache_salt, start + counter.fetch_add(1, std::memory_order_relaxed));
}
}  // namespace

uint64_t receive_prompt_kv(ServerContext& context, const KvTransferSource& source, const std::vector<int32_t>& prompt,
                           uint64_t cache_salt) {
  using HandoffClock = std::chrono::steady_clock;  // generation.h has a `Clock`
  const HandoffClock::time_point started = HandoffClock::now();
  const auto deadline = started + std::chrono::duration_cast<HandoffClock::duration>(
                                      std::chrono::duration<double>(context.kv_handoff.fetch_timeout_s));
  PromptKvExchange exchange(context.engine);
  try {
    // Shared: what this instance's prefix cache has already (a conversation's earlier turns);
    // only the rest moves. Not shared: the request runs under a salt of its own, so the blocks
    // imported under it (and the ones it computes after them) are adopted by no other request;
    // nothing is cached under that salt, so the whole prompt moves.
    const uint64_t run_salt = context.kv_handoff.share_imported ? cache_salt : private_cache_salt(cache_salt);
    std::future<int64_t> cached = exchange.cached_prompt_tokens(prompt, run_salt);
    if (cached.wait_until(deadline) != std::future_status::ready) {
      throw lumen::Error("the engine did not report its cached prefix in time");
    }
    const int64_t known = cached.get();
    const auto adoptable = static_cast<int64_t>(prompt.size()) - 1;
    const size_t max_pages = exchange.kv_transfer_pages(known, adoptable);
    if (max_pages == 0) return cache_salt;  // nothing to move: cached here already, or shorter than a block
    kv_transfer::KvFetch fetch{source.request_id, cache_salt, exchange.kv_format(), known, prompt};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - HandoffClock::now());
    std::optional<PromptKv> kv = kv_transfer::fetch_prompt_kv(
        source.endpoint, fetch, exchange.kv_page_bytes(), max_pages, std::max(left, std::chrono::milliseconds(1)),
        context.kv_handoff.key ? &*context.kv_handoff.key : nullptr);
    if (!kv) {
      context.metrics.count_kv_fetch(KvFetchOutcome::Missing);
      return cache_salt;
    }
    kv->cache_salt = run_salt;
    // Checks the pages (exchange.import_prompt_kv throws for a NaN, infinite or never-computed
    // one), then runs at the engine's next step, before the request submitted after it is
    // scheduled; that result is not awaited (an import that finds the cache changed just leaves
    // the work).
    exchange.import_prompt_kv(prompt, std::move(*kv));
    context.metrics.count_kv_fetch(KvFetchOutcome::Imported);
    context.metrics.kv_fetch_time.observe(std::chrono::duration<double>(HandoffClock::now() - started).count());
    return run_salt;
  } catch (const std::exception& e) {
    context.metrics.count_kv_fetch(KvFetchOutcome::Failed);
    fmt::print(stderr, "lumen serve: fetching the prompt's K/V from {} failed, computing it here: {}\n",
               source.endpoint, e.what());
  }
  return cache_salt;
}

}  // namespace lumen::server
