#include "backend/cpu/rope_table.h"

#include <algorithm>

namespace lumen::backend::cpu {

bool RopeTable::matches(const RopeParams& params, std::span<const int32_t> positions) const {
  const RopeParams& p = params_;
  return valid_ && p.rope_dims == params.rope_dims && p.neox == params.neox &&
         p.freq_base == params.freq_base && p.freq_scale == params.freq_scale &&
         p.ext_factor == params.ext_factor && p.attn_factor == params.attn_factor &&
         p.corr_dims[0] == params.corr_dims[0] && p.corr_dims[1] == params.corr_dims[1] &&
         p.freq_factors == params.freq_factors && positions.size() == positions_.size() &&
         std::equal(positions.begin(), positions.end(), positions_.begin());
}

const float* RopeTable::rows(const RopeParams& params, std::span<const int32_t> positions,
                             ThreadPool& pool) {
  if (matches(params, positions)) return table_.data();
  valid_ = false;  // stays false if a resize below throws
  const size_t width = static_cast<size_t>(params.rope_dims);
  positions_.assign(positions.begin(), positions.end());
  if (table_.size() < positions.size() * width) table_.resize(positions.size() * width);
  struct Job {
    const RopeParams* params;
    const int32_t* positions;
    float* table;
    size_t width;
  } job{&params, positions_.data(), table_.data(), width};
  const Job* j = &job;  // one pointer captured: std::function keeps it without allocating
  pool.parallel_for(static_cast<int64_t>(positions.size()), [j](int64_t t, unsigned) {
    rope_cache(*j->params, j->positions[t], j->table + static_cast<size_t>(t) * j->width);
  });
  params_ = params;
  valid_ = true;
  return table_.data();
}

}  // namespace lumen::backend::cpu
