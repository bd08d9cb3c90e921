#include "engine/engine_backend_needs.h"

#include "engine/kv_cache_dtype.h"
#include "model/kv_cache.h"

namespace lumen::engine {

using backend::BackendFeature;

backend::BackendNeeds engine_backend_needs(const model::HParams& hp, const EngineConfig& config) {
  backend::BackendNeeds needs;
  const tensor::DType kv_type = kv_tensor_type(config.kv_cache_dtype);
  needs.add_kv_type(kv_type);
  if (config.kv_cache_rotation && model::rotates_kv_cache(hp, kv_type)) needs.add(BackendFeature::RotatedKv);
  // Lookahead's window rides in the verification pass under a tree mask; num_candidates > 1
  // verifies token trees, whose accepted branch is moved row by row (copy_kv_row).
  if (config.speculative.method == SpeculativeMethod::Lookahead || config.speculative.num_candidates > 1) {
    needs.add(BackendFeature::TreeAttention);
  }
  if (config.context_overflow == ContextOverflow::Shift || config.kv_window_tokens > 0) {
    needs.add(BackendFeature::ShiftKeys);
  }
  for (BackendFeature f : kv_eviction_needs(config.kv_importance).features) needs.add(f);
  return needs;
}

backend::BackendNeeds kv_eviction_needs(const KvImportance& importance) {
  backend::BackendNeeds needs;
  if (importance.enabled()) needs.add(BackendFeature::KvEviction);
  return needs;
}

}  // namespace lumen::engine
