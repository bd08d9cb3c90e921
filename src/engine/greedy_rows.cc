#include "engine/greedy_rows.h"

#include <cstring>

#include "sampling/sampler.h"

namespace lumen::engine {

bool all_finite(std::span<const float> values) {
  // NaN and the infinities are the floats whose exponent bits are all ones.
  uint32_t bad = 0;
  for (const float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof(bits));
    bad |= static_cast<uint32_t>((bits & 0x7f800000u) == 0x7f800000u);
  }
  return bad == 0;
}

backend::RowArgmax host_row_argmax(std::span<const float> row) {
  backend::RowArgmax result;
  result.token = sampling::argmax(row);
  result.value = row.empty() ? 0.0f : row[static_cast<size_t>(result.token)];
  result.finite = all_finite(row) ? 1 : 0;
  return result;
}

}  // namespace lumen::engine
