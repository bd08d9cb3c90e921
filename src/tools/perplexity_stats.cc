#include "tools/perplexity_stats.h"

#include <algorithm>
#include <cmath>

namespace lumen::tools {

Estimate mean_with_error(double sum, double sum2, int64_t count) {
  if (count < 1) return {};
  const double n = static_cast<double>(count);
  const double mean = sum / n;
  const double variance = sum2 / n - mean * mean;
  return {mean, variance > 0 && count > 1 ? std::sqrt(variance / (n - 1)) : 0.0};
}

double percentile(const std::vector<float>& sorted, double fraction) {
  if (sorted.empty()) return 0.0;
  if (fraction <= 0) return sorted.front();
  if (fraction >= 1) return sorted.back();
  const double at = fraction * static_cast<double>(sorted.size() - 1);
  const size_t below = static_cast<size_t>(at);
  const double t = at - static_cast<double>(below);
  const size_t above = std::min(below + 1, sorted.size() - 1);
  return (1 - t) * sorted[below] + t * sorted[above];
}

Estimate NllSums::perplexity() const {
  const Estimate log_ppl = mean_with_error(sum, sum2, count);
  const double ppl = std::exp(log_ppl.value);
  return {ppl, ppl * log_ppl.error};  // d exp(x) = exp(x) dx
}

void KldSums::add(const KldSample& s) {
  nll_.add(s.nll);
  nll_base_.add(s.nll_base);
  nll_cross_ += s.nll * s.nll_base;
  kld_sum_ += s.kld;
  kld_sum2_ += s.kld * s.kld;
  const double d = s.p_diff;
  p_diff_sum_ += d;
  p_diff_sum2_ += d * d;
  p_diff_sum4_ += d * d * d * d;
  same_top_ += s.same_top ? 1 : 0;
  ++count_;
  kld_values_.push_back(static_cast<float>(s.kld));
  p_diff_values_.push_back(s.p_diff);
}

KldReport KldSums::report() const {
  KldReport r;
  r.count = count_;
  if (count_ == 0) return r;
  const double n = static_cast<double>(count_);
  r.ppl = nll_.perplexity();
  r.ppl_base = nll_base_.perplexity();
  const Estimate log_ppl = mean_with_error(nll_.sum, nll_.sum2, count_);
  const Estimate log_ppl_base = mean_with_error(nll_base_.sum, nll_base_.sum2, count_);
  // Covariance of the two means (the samples are paired: the same positions).
  const double covariance =
      count_ > 1 ? (nll_cross_ / n - log_ppl.value * log_ppl_base.value) / (n - 1) : 0.0;
  const double denominator = log_ppl.error * log_ppl_base.error;
  r.log_ppl_correlation = denominator > 0 ? covariance / denominator : 0.0;
  const double ratio_variance =
      log_ppl.error * log_ppl.error + log_ppl_base.error * log_ppl_base.error - 2 * covariance;
  r.log_ppl_ratio = {log_ppl.value - log_ppl_base.value, std::sqrt(std::max(ratio_variance, 0.0))};

  r.kld = mean_with_error(kld_sum_, kld_sum2_, count_);
  std::vector<float> kld = kld_values_;
  std::sort(kld.begin(), kld.end());
  r.kld_min = kld.front();
  r.kld_max = kld.back();
  r.kld_median = percentile(kld, 0.5);
  for (double f : {0.999, 0.99, 0.95, 0.90, 0.10, 0.05, 0.01, 0.001}) r.kld_percentiles.emplace_back(f, percentile(kld, f));

  r.p_diff = mean_with_error(p_diff_sum_, p_diff_sum2_, count_);
  std::vector<float> p_diff = p_diff_values_;
  std::sort(p_diff.begin(), p_diff.end());
  r.p_diff_min = p_diff.front();
  r.p_diff_max = p_diff.back();
  r.p_diff_median = percentile(p_diff, 0.5);
  for (double f : {0.999, 0.99, 0.95, 0.90, 0.75, 0.25, 0.10, 0.05, 0.01, 0.001}) {
    r.p_diff_percentiles.emplace_back(f, percentile(p_diff, f));
  }
  const Estimate mse = mean_with_error(p_diff_sum2_, p_diff_sum4_, count_);
  const double rms = std::sqrt(mse.value);
  r.p_diff_rms = {rms, rms > 0 ? 0.5 / rms * mse.error : 0.0};

  const double top = static_cast<double>(same_top_) / n;
  r.same_top = {top, count_ > 1 ? std::sqrt(top * (1 - top) / (n - 1)) : 0.0};
  return r;
}

}  // namespace lumen::tools
