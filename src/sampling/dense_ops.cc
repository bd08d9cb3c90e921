#include "sampling/dense_ops.h"

#include <algorithm>
#include <array>
#include <functional>
#include <limits>

#include "sampling/dense_kernels.h"

namespace lumen::sampling {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

float block_max(const float* x, size_t n) { return kernels::best_kernels().max(x, n); }

}  // namespace

float max_value(std::span<const float> x) { return block_max(x.data(), x.size()); }

size_t first_index_of(std::span<const float> x, float value) {
  return static_cast<size_t>(std::find(x.begin(), x.end(), value) - x.begin());
}

double sum_exp(std::span<const float> x, float shift, float scale) {
  // Float sums per block (64 terms of at most 1 lose nothing that matters), a double total.
  const auto exp_sum = kernels::best_kernels().exp_sum;
  double total = 0.0;
  for (size_t start = 0; start < x.size(); start += kBlock) {
    total += exp_sum(x.data() + start, std::min(kBlock, x.size() - start), shift, scale, nullptr);
  }
  return total;
}

void exp_into(std::span<const float> x, float shift, std::span<float> out) {
  const auto exp_sum = kernels::best_kernels().exp_sum;
  for (size_t start = 0; start < x.size(); start += kBlock) {
    exp_sum(x.data() + start, std::min(kBlock, x.size() - start), shift, 1.0f, out.data() + start);
  }
}

double exp_moments(std::span<const float> x, float shift, double& weighted) {
  const auto moments = kernels::best_kernels().exp_moments;
  double total = 0.0;
  weighted = 0.0;
  for (size_t start = 0; start < x.size(); start += kBlock) {
    float block_weighted = 0.0f;
    total += moments(x.data() + start, std::min(kBlock, x.size() - start), shift, &block_weighted);
    weighted += block_weighted;
  }
  return total;
}

double exp_with_block_sums(std::span<const float> x, float shift, float scale, std::span<float> out,
                           std::span<double> block_sums) {
  const auto exp_sum = kernels::best_kernels().exp_sum;
  double total = 0.0;
  for (size_t start = 0, b = 0; start < x.size(); start += kBlock, ++b) {
    const size_t n = std::min(kBlock, x.size() - start);
    block_sums[b] = exp_sum(x.data() + start, n, shift, scale, out.data() + start);
    total += block_sums[b];
  }
  return total;
}

namespace {

// For a short selection from many blocks: the n-th largest of the blocks' maxima, which no value
// of the n largest is below (n blocks hold a value at least that large), and each block's
// maximum in `maxima`. -inf when the cut cannot be had (too few blocks, a NaN maximum).
constexpr size_t kCutMaxN = 64;
constexpr size_t kCutMaxBlocks = 4096;  // rows up to 262 144 values

float block_maxima_cut(std::span<const float> x, size_t n, std::array<float, kCutMaxBlocks>& maxima) {
  const size_t blocks = (x.size() + kBlock - 1) / kBlock;
  if (n > kCutMaxN || blocks <= n || blocks > kCutMaxBlocks) return kNegInf;
  std::array<float, kCutMaxN> largest{};  // a min-heap of the n largest maxima so far
  size_t held = 0;
  for (size_t b = 0; b < blocks; ++b) {
    const size_t start = b * kBlock;
    const float m = block_max(x.data() + start, std::min(kBlock, x.size() - start));
    if (m != m) return kNegInf;
    maxima[b] = m;
    if (held < n) {
      largest[held++] = m;
      std::push_heap(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(held), std::greater<>());
    } else if (m > largest[0]) {
      std::pop_heap(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(n), std::greater<>());
      largest[n - 1] = m;
      std::push_heap(largest.begin(), largest.begin() + static_cast<std::ptrdiff_t>(n), std::greater<>());
    }
  }
  return largest[0];
}

}  // namespace

void select_top(std::span<const float> x, size_t n, std::vector<Candidate>& out) {
  out.clear();
  if (n == 0) return;
  // Blocks whose maximum is below the cut hold none of the n: a second pass reads only the few
  // blocks that can (about n of them), and in them only the values at or above the cut.
  std::array<float, kCutMaxBlocks> maxima;
  const float cut = block_maxima_cut(x, n, maxima);
  const bool by_cut = cut > kNegInf;
  // A heap whose front is the least likely kept candidate (more_likely as "less than").
  for (size_t start = 0, b = 0; start < x.size(); start += kBlock, ++b) {
    const size_t end = std::min(start + kBlock, x.size());
    if (by_cut && maxima[b] < cut) continue;
    // Later ids lose ties, so a block can only contribute values strictly above the minimum.
    if (!by_cut && out.size() == n && !(block_max(x.data() + start, end - start) > out.front().logit)) continue;
    for (size_t i = start; i < end; ++i) {
      const Candidate c{static_cast<int32_t>(i), x[i]};
      if (!(c.logit > kNegInf)) continue;  // -inf (masked) and NaN are never candidates
      if (by_cut && c.logit < cut) continue;
      if (out.size() < n) {
        out.push_back(c);
        std::push_heap(out.begin(), out.end(), more_likely);
      } else if (c.logit > out.front().logit) {
        std::pop_heap(out.begin(), out.end(), more_likely);
        out.back() = c;
        std::push_heap(out.begin(), out.end(), more_likely);
      }
    }
  }
  std::sort(out.begin(), out.end(), more_likely);
}

void collect_at_least(std::span<const float> x, float threshold, CandidateList& out) {
  out.clear();
  if (threshold == kNegInf) {
    // Nearly everything is kept: size for all, write without a branch, cut to what was kept.
    out.ids.resize(x.size());
    out.logits.resize(x.size());
    size_t kept = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      out.ids[kept] = static_cast<int32_t>(i);
      out.logits[kept] = x[i];
      kept += x[i] > kNegInf ? 1 : 0;
    }
    out.ids.resize(kept);
    out.logits.resize(kept);
    return;
  }
  for (size_t start = 0; start < x.size(); start += kBlock) {
    const size_t end = std::min(start + kBlock, x.size());
    if (!(block_max(x.data() + start, end - start) >= threshold)) continue;
    for (size_t i = start; i < end; ++i) {
      if (x[i] >= threshold) out.push_back(static_cast<int32_t>(i), x[i]);
    }
  }
}

}  // namespace lumen::sampling
