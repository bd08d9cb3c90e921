#pragma once
// The engine loop's side of disaggregated prefill and decode (lumen/prompt_kv.h): reading a
// prompt's K/V out of the paged cache as the next request with it would adopt it, and writing
// another engine's K/V for a prompt into free blocks, published in the prefix cache so that the
// request that follows adopts it like any cached prefix. Only the loop thread calls these.
#include <cstdint>
#include <optional>
#include <span>

#include "engine/loaded_model.h"
#include "engine/prompt_kv_store.h"
#include "kv/sequence_kv.h"
#include "lumen/engine_config.h"
#include "lumen/prompt_kv.h"
#include "model/kv_cache.h"

namespace lumen::engine {

// What must agree between two engines for one's pages to mean the same in the other: the model
// file (its size, tensor table and a sample of every tensor's bytes), the hyperparameters that
// shape K (rope), and the cache's element type, rotation, block size and layer groups. A
// fingerprint, not a proof: two files that differ only outside the sampled bytes collide.
uint64_t kv_format(const LoadedModel& model, const model::KvCache& cache, KvCacheDtype dtype);

// The cached whole blocks of prompt a request would adopt (at most prompt.size() - 1 tokens: the
// last one is always computed, to sample from), without counting a prefix-cache lookup.
int64_t cached_prompt_tokens(const kv::KvSpace& space, std::span<const int32_t> prompt, uint64_t keyed_salt);

// Those blocks' pages (every one, n_known 0) for the store; nullopt when not a block is cached.
std::optional<StoredPromptKv> capture_prompt_kv(const kv::KvSpace& space, const model::KvCache& cache,
                                                std::span<const int32_t> prompt, uint64_t keyed_salt);

// Throws lumen::Error unless every page of kv is this cache's size, finite in every K and V
// value, and not all zeros (a block never computed). Reads only the cache's geometry, so any
// thread may call it: the decode side checks a peer's pages before it queues the import.
void check_imported_pages(const model::KvCache& cache, const PromptKv& kv);

// Writes kv (for `prompt`, whose keyed salt this is) into free blocks and publishes them; returns
// the positions added to the prefix cache. 0 when the cache no longer holds exactly kv.n_known of
// the prompt (it changed since the sender was told) or the pool has no room: the request then
// computes what is missing itself. Throws lumen::Error when kv does not fit the prompt or the
// cache (tokens, counts, page sizes); the format is the caller's to check.
int64_t import_prompt_kv(const kv::KvSpace& space, model::KvCache& cache, std::span<const int32_t> prompt,
                         uint64_t keyed_salt, const PromptKv& kv);

}  // namespace lumen::engine
