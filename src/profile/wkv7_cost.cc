#include "profile/wkv7_cost.h"

namespace lumen::profile {

OpCost rwkv_wkv7_cost(const backend::Wkv7Rows& rows, int64_t head_size, std::span<const backend::Wkv7Sequence> seqs) {
  constexpr double kF32 = 4.0;
  const auto width = static_cast<double>(rows.r.dims[0]);
  double tokens = 0, state_bytes = 0;
  for (const backend::Wkv7Sequence& s : seqs) {
    if (s.n_tokens == 0) continue;  // its state is not touched
    tokens += static_cast<double>(s.n_tokens);
    state_bytes += static_cast<double>(s.state.rows()) * static_cast<double>(s.state.row_bytes);
  }
  return {2.0 * state_bytes + 7.0 * tokens * width * kF32, 9.0 * tokens * width * static_cast<double>(head_size),
          false};
}

}  // namespace lumen::profile
