#pragma once
// The numbers llama-perplexity reports, from per-position samples: perplexity with the
// standard error of its log, and for a comparison with a base model the KL divergence, the
// change in the probability of the right token (delta-p) and how often both models rank the
// same token first, with percentiles.
#include <cstdint>
#include <vector>

#include "tools/log_prob_row.h"

namespace lumen::tools {

struct Estimate {
  double value = 0.0;
  double error = 0.0;  // standard error
};

// Mean of `count` samples from their sum and sum of squares, with the standard error of the
// mean (0 for fewer than two samples or a non-positive variance).
Estimate mean_with_error(double sum, double sum2, int64_t count);

// The value below which `fraction` of the sorted values lie, interpolating linearly between
// neighbours (fraction 0: the smallest, 1: the largest).
double percentile(const std::vector<float>& sorted, double fraction);

struct NllSums {
  double sum = 0.0, sum2 = 0.0;
  int64_t count = 0;
  void add(double nll) {
    sum += nll;
    sum2 += nll * nll;
    ++count;
  }
  // exp(mean nll), and its error carried through the exponential.
  Estimate perplexity() const;
};

struct KldReport {
  Estimate ppl, ppl_base;
  double log_ppl_correlation = 0.0;  // between the two models' per-token nll
  Estimate log_ppl_ratio;            // mean ln(PPL / PPL_base)
  Estimate kld;
  double kld_max = 0.0, kld_min = 0.0, kld_median = 0.0;
  std::vector<std::pair<double, double>> kld_percentiles;  // (fraction, value)
  Estimate p_diff;
  double p_diff_max = 0.0, p_diff_min = 0.0, p_diff_median = 0.0;
  std::vector<std::pair<double, double>> p_diff_percentiles;
  Estimate p_diff_rms;
  Estimate same_top;  // fraction of positions
  int64_t count = 0;
};

class KldSums {
 public:
  void add(const KldSample& s);
  int64_t count() const { return count_; }
  // Running values, for per-window progress.
  Estimate perplexity() const { return nll_.perplexity(); }
  Estimate mean_kld() const { return mean_with_error(kld_sum_, kld_sum2_, count_); }
  double same_top_fraction() const { return count_ ? static_cast<double>(same_top_) / static_cast<double>(count_) : 0.0; }
  KldReport report() const;

 private:
  NllSums nll_, nll_base_;
  double nll_cross_ = 0.0;  // sum of nll * nll_base
  double kld_sum_ = 0.0, kld_sum2_ = 0.0;
  double p_diff_sum_ = 0.0, p_diff_sum2_ = 0.0, p_diff_sum4_ = 0.0;
  int64_t same_top_ = 0, count_ = 0;
  std::vector<float> kld_values_, p_diff_values_;
};

}  // namespace lumen::tools
