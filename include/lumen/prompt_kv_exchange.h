#pragma once
// Disaggregated prefill and decode (lumen/prompt_kv.h): one engine computes prompts, another
// continues them with the K/V moved over. This is an Engine's side of that exchange, kept apart
// from Engine so that the engine's own interface is only about running requests.
//
// Not with tensor or pipeline parallelism, and only with prefix caching (the moved K/V arrives
// as a cached prefix); the methods that need them throw lumen::Error otherwise.
#include <cstddef>
#include <cstdint>
#include <future>
#include <optional>
#include <vector>

#include "lumen/engine.h"
#include "lumen/prompt_kv.h"

namespace lumen {

struct PromptKvStats {
  // The sender (EngineConfig::prompt_kv_store_bytes): prompts whose K/V was kept for another
  // engine, taken by one, and pushed out for room before anyone took them.
  uint64_t stored = 0;
  uint64_t taken = 0;
  uint64_t evicted = 0;
  // The receiver: positions of K/V imported from another engine into the prefix cache.
  uint64_t imported_tokens = 0;
};

// A view of one Engine, which must outlive it; cheap to make, copyable, and every method may be
// called from any thread.
class PromptKvExchange {
 public:
  explicit PromptKvExchange(Engine& engine) : engine_(&engine) {}

  // What must agree between the two engines, as a fingerprint, and the bytes of one page (a
  // block of every layer of a group).
  uint64_t kv_format() const;
  size_t kv_page_bytes() const;
  // The pages a PromptKv of positions [n_known, n_tokens) has for this cache (both rounded down
  // to whole blocks): what a receiver may expect at most.
  size_t kv_transfer_pages(int64_t n_known, int64_t n_tokens) const;

  // The sender, with EngineConfig::prompt_kv_store_bytes: the K/V that request_id's prompt had
  // when it was computed (its whole blocks, as a request would adopt them), from position
  // n_known on (rounded down to a block). Taken once; nullopt when the engine holds none for it
  // (not computed yet, already taken, pushed out for room), or when `prompt` (which whoever asks
  // must know) does not begin with its tokens or cache_salt is not the request's.
  std::optional<PromptKv> take_prompt_kv(uint64_t request_id, const std::vector<int32_t>& prompt, uint64_t cache_salt,
                                         int64_t n_known);

  // The receiver. How many leading tokens of `prompt` this engine's prefix cache would give a
  // request now (whole blocks; never the last token, which is always computed): the n_known to
  // ask the sender for. Then import_prompt_kv puts the sender's K/V into the prefix cache, so
  // that the request with that prompt, submitted after it, adopts it instead of computing it;
  // it resolves to the positions added (0 when the cache changed in between, or is full: the
  // request then computes what is missing itself). Both run at the engine's next step (on the
  // thread that steps it) and never change what the request generates. import_prompt_kv
  // throws lumen::Error at once, writing nothing, when kv is for another kv_format() or a page
  // is of another size, holds a NaN or infinite value, or is all zeros (a block never
  // computed); its future holds one when kv does not fit the prompt.
  // An engine destroyed first breaks the futures (std::future_error).
  std::future<int64_t> cached_prompt_tokens(std::vector<int32_t> prompt, uint64_t cache_salt);
  std::future<int64_t> import_prompt_kv(std::vector<int32_t> prompt, PromptKv kv);

  // Read now (not as of the last step).
  PromptKvStats stats() const;

 private:
  Engine* engine_;
};

}  // namespace lumen
