#pragma once
// What a decode instance asks a prefill instance for (disaggregated prefill/decode): the K/V
// that the prefill engine computed for one of its requests, in the asker's cache format.
#include <cstdint>
#include <vector>

namespace lumen::kv_transfer {

struct KvFetch {
  uint64_t request_id = 0;      // the prefill engine's request id
  uint64_t cache_salt = 0;      // the request's cache_salt; the answer must carry the same
  uint64_t format = 0;          // the asker's PromptKvExchange::kv_format(); the answer must match it
  int64_t n_known = 0;          // the asker already holds [0, n_known) in its prefix cache
  std::vector<int32_t> tokens;  // the asker's prompt tokens (the whole prompt)
};

}  // namespace lumen::kv_transfer
