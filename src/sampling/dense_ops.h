#pragma once
// The passes over a whole row of logits (49k to 262k floats) the sampler cannot avoid, each
// written to vectorize, and the partial selections that keep the rest of the work on a short
// candidate list: nothing here sorts the vocabulary. Rows are scanned in blocks of kBlock; a
// block whose maximum cannot contribute is skipped after one vectorized max.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "sampling/candidate.h"

namespace lumen::sampling {

inline constexpr size_t kBlock = 64;

// The largest value (NaN is skipped; -inf for an empty or all -inf/NaN row).
float max_value(std::span<const float> x);

// The lowest index holding exactly `value` (x.size() when none does).
size_t first_index_of(std::span<const float> x, float value);

// sum_i exp((x_i - shift) * scale), the terms computed by fast_exp (-inf terms are 0).
double sum_exp(std::span<const float> x, float shift, float scale);

// out_i = exp(x_i - shift); `out` has x.size() elements.
void exp_into(std::span<const float> x, float shift, std::span<float> out);

// With w_i = exp(x_i - shift): returns sum w_i and sets `weighted` to sum w_i (x_i - shift)
// (the two sums an entropy needs).
double exp_moments(std::span<const float> x, float shift, double& weighted);

// out_i = exp((x_i - shift) * scale) and, per block of kBlock, the block's sum. `out` has
// x.size() elements, `block_sums` ceil(x.size() / kBlock). Returns the total.
double exp_with_block_sums(std::span<const float> x, float shift, float scale, std::span<float> out,
                           std::span<double> block_sums);

// The min(n, #finite) largest finite values, most likely first (more_likely order: ties go to
// the lower id). A bounded heap over the values; blocks that cannot hold any of them (below
// the n-th largest block maximum, for n <= 64, or below the heap's minimum) are skipped.
void select_top(std::span<const float> x, size_t n, std::vector<Candidate>& out);

// Every finite x_i >= threshold, in id order.
void collect_at_least(std::span<const float> x, float threshold, CandidateList& out);

}  // namespace lumen::sampling
