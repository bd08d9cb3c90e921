#pragma once
// The cos/sin rows of one batch's positions, kept between rope calls. A forward pass ropes Q
// and K in every layer at the same positions with the same parameters, so the table is
// computed once per pass instead of twice per layer: rope_dims / 2 sin/cos pairs per token
// were about 1.5% of a small model's decode step, done on one thread while the others wait.
#include <cstdint>
#include <span>
#include <vector>

#include "backend/cpu/rope.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu {

class RopeTable {
 public:
  // Row t (rope_dims floats, as rope_cache writes them) for positions[t]. Recomputed only when
  // the parameters or the positions differ from the last call's (freq_factors is compared by
  // address: it points into the model's weights, which do not change).
  const float* rows(const RopeParams& params, std::span<const int32_t> positions, ThreadPool& pool);

 private:
  bool matches(const RopeParams& params, std::span<const int32_t> positions) const;

  bool valid_ = false;
  RopeParams params_{};
  std::vector<int32_t> positions_;  // grow only: the per-token path allocates nothing
  std::vector<float> table_;
};

}  // namespace lumen::backend::cpu
