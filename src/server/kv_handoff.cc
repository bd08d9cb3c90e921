#include "server/kv_handoff.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <exception>
#include <future>

#include "kv_transfer/kv_transfer_client.h"
#include "lumen/error.h"
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

void receive_prompt_kv(ServerContext& context, const KvTransferSource& source, const std::vector<int32_t>& prompt,
                       uint64_t cache_salt) {
  using Clock = std::chrono::steady_clock;
  const Clock::time_point started = Clock::now();
  const auto deadline = started + std::chrono::duration_cast<Clock::duration>(
                                      std::chrono::duration<double>(context.kv_handoff.fetch_timeout_s));
  Engine& engine = context.engine;
  try {
    // What this instance's prefix cache has already (a conversation's earlier turns): only the
    // rest moves.
    std::future<int64_t> cached = engine.cached_prompt_tokens(prompt, cache_salt);
    if (cached.wait_until(deadline) != std::future_status::ready) {
      throw lumen::Error("the engine did not report its cached prefix in time");
    }
    const int64_t known = cached.get();
    const auto adoptable = static_cast<int64_t>(prompt.size()) - 1;
    const size_t max_pages = engine.kv_transfer_pages(known, adoptable);
    if (max_pages == 0) return;  // nothing to move: cached here already, or shorter than a block
    kv_transfer::KvFetch fetch{source.request_id, cache_salt, engine.kv_format(), known, prompt};
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    std::optional<PromptKv> kv = kv_transfer::fetch_prompt_kv(source.endpoint, fetch, engine.kv_page_bytes(),
                                                              max_pages, std::max(left, std::chrono::milliseconds(1)));
    if (!kv) {
      context.metrics.count_kv_fetch(KvFetchOutcome::Missing);
      return;
    }
    // Runs at the engine's next step, before the request submitted after it is scheduled; its
    // result is not awaited (an import that finds the cache changed just leaves the work).
    engine.import_prompt_kv(prompt, std::move(*kv));
    context.metrics.count_kv_fetch(KvFetchOutcome::Imported);
    context.metrics.kv_fetch_time.observe(std::chrono::duration<double>(Clock::now() - started).count());
  } catch (const std::exception& e) {
    context.metrics.count_kv_fetch(KvFetchOutcome::Failed);
    fmt::print(stderr, "lumen serve: fetching the prompt's K/V from {} failed, computing it here: {}\n",
               source.endpoint, e.what());
  }
}

}  // namespace lumen::server
