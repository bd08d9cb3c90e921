#pragma once
// Internal to the CUDA backend: the argmax of a row of logits as a reduction (row_argmax.cu),
// written once for the device and the host so tests/unit/cuda_host can check on a CPU that any
// split of a row into parts, reduced in any order, gives the sampler's own greedy choice
// (sampling::argmax: the lowest index among equal maxima).
//
// A part's candidate is (value, index); NaN never wins (it compares false both ways, so the
// candidate it meets is kept), and equal values go to the lower index, so the combine is
// associative and commutative over any partition of the row. finite_bits tells NaN and the
// infinities apart from the rest by their all-ones exponent, as the engine's host check does.
#include <cstdint>
#include <cstring>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda::argmax {

// An index above any row's: a part that saw no value yet.
inline constexpr int32_t kNoIndex = 0x7fffffff;

struct Candidate {
  float value;
  int32_t index;
};

LUMEN_HD Candidate empty_candidate() { return {-INFINITY, kNoIndex}; }

// Whether (value, index) beats `best`: larger, or equal and earlier. NaN beats nothing.
LUMEN_HD bool beats(float value, int32_t index, const Candidate& best) {
  return value > best.value || (value == best.value && index < best.index);
}

LUMEN_HD Candidate combine(const Candidate& a, const Candidate& b) { return beats(b.value, b.index, a) ? b : a; }

// 1 when x is finite, 0 for NaN and the infinities.
LUMEN_HD int32_t finite_bits(float x) {
  uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(x);
#else
  std::memcpy(&bits, &x, sizeof(bits));
#endif
  return (bits & 0x7f800000u) != 0x7f800000u ? 1 : 0;
}

}  // namespace lumen::backend::cuda::argmax
