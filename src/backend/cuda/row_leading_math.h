#pragma once
// Internal to the CUDA backend: a row of logits reduced to its 64 most likely tokens
// (backend::RowLeading; row_leading.cu), written once for the device and the host so that
// tests/unit/cuda_host can replay the kernel's selection on a CPU and hold it to the sampler's
// own (sampling::select_top: the largest values, equal values in index order).
//
// The selection is a radix select on order-preserving keys. Every value maps to a 32-bit key
// whose unsigned order is the values' order (+0 and -0 share one key: they are equal values).
// Three passes over the row histogram one digit of the keys that still match the prefix chosen
// so far (11, 11, then 10 bits, from the top); after each, the digit whose bin holds the K-th
// largest key is found scanning the bins from the top. After the third pass that K-th key T is
// known exactly, with how many keys lie above it. A last pass in index order collects every key
// above T and the lowest-indexed keys equal to T until K are taken; a bitonic sort then puts the
// K in the sampler's order (larger key first, then lower index).
#include <cstdint>
#include <cstring>

#include "backend/cuda/hd_math.h"

namespace lumen::backend::cuda::leading {

inline constexpr int kCandidates = 64;  // backend::kLeadingCandidates
inline constexpr int kPasses = 3;
inline constexpr int kMaxBins = 2048;  // the widest digit's bins

// A value's key: larger values have larger keys; -0 and +0 have the same.
LUMEN_HD uint32_t key_of(float value) {
  if (value == 0.0f) value = 0.0f;  // -0 -> +0
  uint32_t bits;
#if defined(__CUDA_ARCH__)
  bits = __float_as_uint(value);
#else
  std::memcpy(&bits, &value, sizeof(bits));
#endif
  return (bits & 0x80000000u) != 0 ? ~bits : (bits | 0x80000000u);
}

// Pass p's digit: its lowest bit, its number of bins, and the mask of the bits above it (the
// prefix the earlier passes chose).
LUMEN_HD int digit_shift(int pass) { return pass == 0 ? 21 : pass == 1 ? 10 : 0; }
LUMEN_HD int digit_bins(int pass) { return pass == 2 ? 1024 : 2048; }
LUMEN_HD uint32_t prefix_mask(int pass) { return pass == 0 ? 0u : pass == 1 ? 0xffe00000u : 0xfffffc00u; }
LUMEN_HD uint32_t digit_of(uint32_t key, int pass) {
  return (key >> digit_shift(pass)) & static_cast<uint32_t>(digit_bins(pass) - 1);
}

// The bin, scanning from the top, at which the count of keys reaches `need` (1 <= need <= the
// histogram's total), and how many keys lie in the bins above it.
struct BinChoice {
  uint32_t bin;
  uint32_t above;
};

// Serially, bin by bin (the reference the kernel's warp-wide search is checked against).
LUMEN_HD BinChoice choose_bin(const uint32_t* histogram, int bins, uint32_t need) {
  uint32_t above = 0;
  for (int b = bins - 1; b > 0; --b) {
    if (above + histogram[b] >= need) return {static_cast<uint32_t>(b), above};
    above += histogram[b];
  }
  return {0u, above};
}

// The kernel's search, by 32 lanes: lane l holds the bins_per_lane bins that are l-th from the
// top; the first lane whose running sum (lanes from the top) reaches `need` scans its own bins.
// `lane_sums[l]`: the sum of lane l's bins.
LUMEN_HD int lane_first_bin(int lane, int bins) { return bins - (lane + 1) * (bins / 32); }
LUMEN_HD BinChoice choose_bin_in_lane(const uint32_t* histogram, int bins, int lane, uint32_t above_lane,
                                      uint32_t need) {
  const int first = lane_first_bin(lane, bins);
  uint32_t above = above_lane;
  for (int b = first + bins / 32 - 1; b > first; --b) {
    if (above + histogram[b] >= need) return {static_cast<uint32_t>(b), above};
    above += histogram[b];
  }
  return {static_cast<uint32_t>(first), above};
}

// The sampler's order on keys: larger first, then lower index.
LUMEN_HD bool before(uint32_t key_a, int32_t index_a, uint32_t key_b, int32_t index_b) {
  return key_a > key_b || (key_a == key_b && index_a < index_b);
}

// One compare-exchange of the bitonic sort of kCandidates entries, for position i at stage
// (k, j) (k = 2, 4, .., kCandidates; j = k / 2, .., 1): the whole list ends in before() order.
LUMEN_HD void bitonic_step(uint32_t* keys, int32_t* indices, float* values, int i, int k, int j) {
  const int partner = i ^ j;
  if (partner <= i) return;
  const bool first_half = (i & k) == 0;
  const bool swap = first_half ? before(keys[partner], indices[partner], keys[i], indices[i])
                               : before(keys[i], indices[i], keys[partner], indices[partner]);
  if (!swap) return;
  const uint32_t key = keys[i];
  keys[i] = keys[partner];
  keys[partner] = key;
  const int32_t index = indices[i];
  indices[i] = indices[partner];
  indices[partner] = index;
  const float value = values[i];
  values[i] = values[partner];
  values[partner] = value;
}

// Padding for the sort when the row has fewer than kCandidates values: after every real entry.
inline constexpr uint32_t kPadKey = 0;
inline constexpr int32_t kPadIndex = 0x7fffffff;

}  // namespace lumen::backend::cuda::leading
