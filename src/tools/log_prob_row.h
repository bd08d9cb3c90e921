#pragma once
// One row of logits seen as a distribution over the vocabulary: its log-normalizer, the
// negative log-likelihood of a token, and llama.cpp's compact 16-bit encoding of the row's
// log-probabilities (what `--kl-divergence-base` files hold), read back for KL divergence.
#include <cstdint>
#include <span>

namespace lumen::tools {

struct RowSummary {
  float max_logit = 0.0f;
  int32_t argmax = 0;       // the first index holding max_logit
  float log_sum_exp = 0.0f; // log(sum(exp(logit - max_logit)))
  // -log p(token): the quantity perplexity averages.
  double nll(std::span<const float> logits, int32_t token) const {
    return static_cast<double>(max_logit) + log_sum_exp - logits[static_cast<size_t>(token)];
  }
};

RowSummary summarize_row(std::span<const float> logits);

// uint16 entries one encoded row takes for a vocabulary: two floats of header (four entries),
// then one entry per token, padded to an even count so every row keeps 4-byte alignment.
int64_t encoded_row_entries(int64_t n_vocab);

// Log-probabilities within 16 nats of the top one, quantized linearly to 16 bits between that
// floor and the top (everything below the floor becomes the floor): row.size() must be
// encoded_row_entries(logits.size()). The header holds the step and the floor's log-probability.
void encode_log_probs(std::span<const float> logits, const RowSummary& summary, std::span<uint16_t> row);

// A decoded view of an encoded row.
class EncodedRow {
 public:
  explicit EncodedRow(std::span<const uint16_t> row);
  float log_prob(int32_t token) const { return scale_ * values_[static_cast<size_t>(token)] + floor_; }
  size_t size() const { return values_.size(); }

 private:
  float scale_;
  float floor_;
  std::span<const uint16_t> values_;
};

// What one scored position contributes to a comparison with a base model's row.
struct KldSample {
  double kld = 0.0;        // KL(base || current)
  float p_diff = 0.0f;     // p(token) - p_base(token)
  double nll = 0.0;        // -log p(token), current model
  double nll_base = 0.0;   // -log p_base(token)
  bool same_top = false;   // both rank the same token first
};

// Tokens whose base log-probability is at or below -16 are left out of the sum: the encoding
// cannot tell them apart (they sit on its floor), and their mass is below e^-16 each.
KldSample compare_with_base(std::span<const float> logits, const RowSummary& summary, const EncodedRow& base,
                            int32_t token);

}  // namespace lumen::tools
