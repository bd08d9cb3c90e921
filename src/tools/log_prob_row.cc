#include "tools/log_prob_row.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace lumen::tools {

namespace {
// The encoding keeps log-probabilities within this many nats of the top one.
constexpr float kRange = 16.0f;
constexpr float kLevels = 65535.0f;
constexpr size_t kHeaderEntries = 4;  // two floats
}  // namespace

RowSummary summarize_row(std::span<const float> logits) {
  RowSummary s;
  s.max_logit = logits[0];
  for (size_t i = 1; i < logits.size(); ++i) {
    if (logits[i] > s.max_logit) {
      s.max_logit = logits[i];
      s.argmax = static_cast<int32_t>(i);
    }
  }
  // The sum in double: 49k terms of very different sizes.
  double sum = 0.0;
  for (float l : logits) sum += std::exp(l - s.max_logit);
  s.log_sum_exp = static_cast<float>(std::log(sum));
  return s;
}

int64_t encoded_row_entries(int64_t n_vocab) { return 2 * ((n_vocab + 1) / 2) + static_cast<int64_t>(kHeaderEntries); }

void encode_log_probs(std::span<const float> logits, const RowSummary& summary, std::span<uint16_t> row) {
  float min_logit = *std::min_element(logits.begin(), logits.end());
  min_logit = std::max(min_logit, summary.max_logit - kRange);
  const float floor_log_prob = min_logit - summary.max_logit - summary.log_sum_exp;
  const float scale = (summary.max_logit - min_logit) / kLevels;
  std::memcpy(row.data(), &scale, sizeof scale);
  std::memcpy(row.data() + 2, &floor_log_prob, sizeof floor_log_prob);
  std::span<uint16_t> values = row.subspan(kHeaderEntries);
  std::fill(values.begin(), values.end(), uint16_t{0});  // the padding entry too
  if (scale == 0.0f) return;  // a flat row: every token on the floor
  const float inv_scale = 1.0f / scale;
  for (size_t i = 0; i < logits.size(); ++i) {
    if (logits[i] > min_logit) {
      // Round to nearest, ties to even (the step is tiny, ties practically never happen).
      const float level = std::nearbyint(inv_scale * (logits[i] - min_logit));
      values[i] = static_cast<uint16_t>(std::min(level, kLevels));
    }
  }
}

EncodedRow::EncodedRow(std::span<const uint16_t> row) : values_(row.subspan(kHeaderEntries)) {
  std::memcpy(&scale_, row.data(), sizeof scale_);
  std::memcpy(&floor_, row.data() + 2, sizeof floor_);
}

KldSample compare_with_base(std::span<const float> logits, const RowSummary& summary, const EncodedRow& base,
                            int32_t token) {
  KldSample out;
  out.nll = summary.nll(logits, token);
  out.nll_base = -static_cast<double>(base.log_prob(token));
  // log p_i = logit_i - log_norm
  const double log_norm = static_cast<double>(summary.max_logit) + summary.log_sum_exp;
  double kld = 0.0;
  int32_t base_top = 0;
  float base_top_log_prob = base.log_prob(0);
  for (size_t i = 0; i < logits.size(); ++i) {
    const float lp_base = base.log_prob(static_cast<int32_t>(i));
    if (lp_base > base_top_log_prob) {
      base_top_log_prob = lp_base;
      base_top = static_cast<int32_t>(i);
    }
    if (lp_base > -kRange) kld += std::exp(static_cast<double>(lp_base)) * (lp_base - (logits[i] - log_norm));
  }
  out.kld = kld;
  out.same_top = base_top == summary.argmax;
  out.p_diff = static_cast<float>(std::exp(-out.nll) - std::exp(-out.nll_base));
  return out;
}

}  // namespace lumen::tools
