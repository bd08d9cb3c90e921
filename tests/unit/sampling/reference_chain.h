#pragma once
// The sampling chain's definitions written as plainly as possible, in double precision, with
// full sorts: what the (partial-selection, float) sampler must agree with. Nothing here shares
// code with src/sampling.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <vector>

#include "sampling/sampling_params.h"

namespace lumen::sampling::testing {

inline constexpr double kNegInfinity = -std::numeric_limits<double>::infinity();

// Logit bias and the penalties over `prompt` then `output` (sampling_params.h's definitions).
inline std::vector<double> reference_processed(std::vector<double> z, const SamplingParams& p,
                                               const std::vector<int32_t>& prompt,
                                               const std::vector<int32_t>& output) {
  for (const auto& [token, bias] : p.logit_bias) z[static_cast<size_t>(token)] += bias;
  if (p.penalty_last_n == 0) return z;
  std::vector<std::pair<int32_t, bool>> sequence;  // (token, is_output)
  for (int32_t t : prompt) sequence.push_back({t, false});
  for (int32_t t : output) sequence.push_back({t, true});
  size_t first = 0;
  if (p.penalty_last_n > 0 && sequence.size() > static_cast<size_t>(p.penalty_last_n)) {
    first = sequence.size() - static_cast<size_t>(p.penalty_last_n);
  }
  std::map<int32_t, int> in_window, as_output;
  for (size_t i = first; i < sequence.size(); ++i) {
    in_window[sequence[i].first]++;
    if (sequence[i].second) as_output[sequence[i].first]++;
  }
  for (const auto& [token, count] : in_window) {
    double& v = z[static_cast<size_t>(token)];
    v = v > 0 ? v / p.repetition_penalty : v * p.repetition_penalty;
    const int c = as_output.count(token) ? as_output[token] : 0;
    v -= c * static_cast<double>(p.frequency_penalty) +
         (c > 0 ? static_cast<double>(p.presence_penalty) : 0.0);
  }
  return z;
}

// softmax over the ids in `set` of s.
inline std::vector<double> softmax_over(const std::vector<double>& s,
                                        const std::vector<size_t>& set) {
  double max = kNegInfinity;
  for (size_t i : set) max = std::max(max, s[i]);
  std::vector<double> q(s.size(), 0.0);
  double total = 0.0;
  for (size_t i : set) total += q[i] = std::exp(s[i] - max);
  for (size_t i : set) q[i] /= total;
  return q;
}

// The smallest prefix of `ordered` whose probability q reaches `mass`.
inline std::vector<size_t> prefix_reaching(const std::vector<size_t>& ordered,
                                           const std::vector<double>& q, double mass) {
  std::vector<size_t> kept;
  double cumulative = 0.0;
  for (size_t i : ordered) {
    kept.push_back(i);
    cumulative += q[i];
    if (cumulative >= mass) break;
  }
  return kept;
}

// The probability of each token being drawn from processed logits z (temperature > 0).
inline std::vector<double> reference_distribution(const std::vector<double>& z,
                                                  const SamplingParams& p) {
  const size_t n = z.size();
  if (p.temperature == 0.0f) {
    std::vector<double> one_hot(n, 0.0);
    one_hot[static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin())] = 1.0;
    return one_hot;
  }
  std::vector<double> s(n);
  for (size_t i = 0; i < n; ++i) s[i] = z[i] / p.temperature;
  std::vector<size_t> set;
  for (size_t i = 0; i < n; ++i) {
    if (z[i] > kNegInfinity) set.push_back(i);
  }
  auto by_likelihood = [&](size_t a, size_t b) { return s[a] > s[b] || (s[a] == s[b] && a < b); };
  std::sort(set.begin(), set.end(), by_likelihood);
  if (p.top_k > 0 && set.size() > static_cast<size_t>(p.top_k))
    set.resize(static_cast<size_t>(p.top_k));
  if (p.top_p < 1.0f) set = prefix_reaching(set, softmax_over(s, set), p.top_p);
  if (p.min_p > 0.0f) {
    const std::vector<double> q = softmax_over(s, set);
    double q_max = 0.0;
    for (size_t i : set) q_max = std::max(q_max, q[i]);
    std::erase_if(set, [&](size_t i) { return q[i] < p.min_p * q_max; });
  }
  if (p.typical_p < 1.0f) {
    const std::vector<double> q = softmax_over(s, set);
    double entropy = 0.0;
    for (size_t i : set) entropy -= q[i] > 0 ? q[i] * std::log(q[i]) : 0.0;
    auto deviation = [&](size_t i) { return std::abs(-std::log(q[i]) - entropy); };
    std::sort(set.begin(), set.end(), [&](size_t a, size_t b) {
      return deviation(a) < deviation(b) || (deviation(a) == deviation(b) && a < b);
    });
    set = prefix_reaching(set, q, p.typical_p);
  }
  return softmax_over(s, set);
}

inline std::vector<double> to_double(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace lumen::sampling::testing
