#include "engine/reduced_rows.h"

#include <cstring>
#include <vector>

#include "sampling/dense_ops.h"
#include "sampling/sampler.h"

namespace lumen::engine {

static_assert(static_cast<size_t>(backend::kLeadingCandidates) == sampling::kLeadingCandidates,
              "a backend sends back the number of candidates the sampler settles a draw from");

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

void host_row_leading(std::span<const float> row, float scale, backend::RowLeading& out) {
  thread_local std::vector<sampling::Candidate> top;
  sampling::select_top(row, sampling::kLeadingCandidates, top);
  out.count = static_cast<int32_t>(top.size());
  for (size_t i = 0; i < top.size(); ++i) {
    out.ids[i] = top[i].id;
    out.logits[i] = top[i].logit;
  }
  out.finite = all_finite(row) ? 1 : 0;
  out.total = scale != 0.0f && !top.empty() ? sampling::sum_exp(row, top[0].logit, scale) : 0.0;
}

}  // namespace lumen::engine
