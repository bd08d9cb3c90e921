#pragma once
// Disaggregated prefill and decode: the K/V of a prompt that one Engine computed, moved to
// another Engine on the same model file with the same cache configuration, which then continues
// the request without computing the prompt again (lumen/prompt_kv_exchange.h: take_prompt_kv,
// import_prompt_kv).
//
// The pages are the KV cache's own blocks of block_size positions, byte for byte, so both
// engines must agree on everything that shapes them: that is `format`
// (PromptKvExchange::kv_format()), a fingerprint of the model file, the cache's element type,
// rotation, block size and layer groups. An import with another format is refused.
#include <cstdint>
#include <vector>

namespace lumen {

struct PromptKv {
  uint64_t format = 0;          // PromptKvExchange::kv_format() of the engine that computed it
  uint64_t cache_salt = 0;      // the request's cache_salt, as given to add_request
  std::vector<int32_t> tokens;  // the prompt's first n tokens (whole blocks), whose K/V this completes
  int64_t n_known = 0;          // the pages start here: the receiver already holds [0, n_known)
  // PromptKvExchange::kv_page_bytes() bytes each: for each layer group of the cache in order, its blocks
  // from max(n_known, the first position its window needs) to tokens.size(), in position order.
  std::vector<std::vector<uint8_t>> pages;
};

}  // namespace lumen
