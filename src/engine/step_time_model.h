#pragma once
// How long an engine step takes, as a function of what it computes, learned online from the
// engine's own measured steps (the whole step: planning, the forward pass, sampling, streaming,
// which is what a decoding stream sees as its inter-token latency). ITL-aware scheduling
// (step_time_budget.h) asks it how many prefill tokens fit beside this step's decodes.
//
// The model is linear in four features:
//   seconds = base + per_token * tokens + per_sampled_row * sampled_rows
//                  + per_kilo_attended * attended / 1024
// - tokens: rows of the flat batch (every row pays the weights' matmuls);
// - sampled_rows: rows that get logits and are sampled (decodes, draft tokens, a prompt's last
//   row): the output head over the vocabulary, the sampling chain, detokenizing, streaming. On a
//   CPU a decode row costs several prefill tokens this way;
// - attended: key positions summed over the rows (a row at position p attends p + 1 keys).
// The fit is least squares over the last kWindow steps that prefilled something and the last
// kWindow that only decoded, kept apart so that a long run of decode-only steps does not push
// out what prefill costs (and the reverse); each half forgets by being overwritten, so the
// model follows the machine's other load. Slopes are ridge-penalized (a direction the samples
// never moved in, such as the batch size while it stays at 16, takes no arbitrary slope) and
// clamped at 0 when predicting (noise can make one negative; a cost is never negative).
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

namespace lumen::engine {

struct StepShape {
  int64_t tokens = 0;
  int64_t sampled_rows = 0;
  int64_t prefill_tokens = 0;  // tokens of sequences not yet decoding (not a feature: a tag)
  double attended = 0;

  // A chunk of n_tokens rows at positions [n_computed, n_computed + n_tokens), n_sampled of them
  // sampled; `prefill` when its sequence is still computing its prompt (or recomputing after a
  // preemption).
  void add_chunk(int64_t n_computed, int64_t n_tokens, int64_t n_sampled, bool prefill);
};

class StepTimeModel {
 public:
  static constexpr size_t kWindow = 64;
  static constexpr size_t kFeatures = 4;
  // Ridge strength on the scaled slopes (least_squares.h): small, so a direction the samples
  // did move in is fitted as measured.
  static constexpr double kRidge = 1e-4;

  void record(const StepShape& shape, double seconds);
  // Enough samples to predict a prefill chunk's cost: at least two steps with prefill tokens,
  // of different sizes, and a fit. Until then the budget grants only its floor.
  bool ready() const { return coefficients_.has_value(); }
  // Predicted seconds (0 until ready()).
  double predict(const StepShape& shape) const;
  // The fitted [base, per_token, per_sampled_row, per_kilo_attended] (empty until ready()).
  std::vector<double> coefficients() const;

 private:
  struct Sample {
    std::array<double, kFeatures> x;
    double prefill_tokens;
    double seconds;
  };
  static std::array<double, kFeatures> features(const StepShape& shape);
  void refit();

  std::vector<Sample> prefill_;  // ring buffers of kWindow
  std::vector<Sample> decode_only_;
  size_t prefill_next_ = 0;
  size_t decode_next_ = 0;
  std::optional<std::array<double, kFeatures>> coefficients_;
};

}  // namespace lumen::engine
