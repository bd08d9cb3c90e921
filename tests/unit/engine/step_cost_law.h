#pragma once
// A made-up machine for the ITL-aware scheduling tests: a step's time as an exact linear law of
// its shape (what engine/step_time_model.h assumes), so the tests can feed "measured" step times
// without a clock and know the right answers.
#include "engine/step_time_model.h"

namespace lumen::engine::testing {

struct StepCostLaw {
  double base = 2e-3;               // seconds per step
  double per_token = 1e-4;          // per row of the batch
  double per_sampled_row = 5e-4;    // per sampled row
  double per_kilo_attended = 2e-4;  // per 1024 attended key positions

  double operator()(const StepShape& s) const {
    return base + per_token * static_cast<double>(s.tokens) + per_sampled_row * static_cast<double>(s.sampled_rows) +
           per_kilo_attended * s.attended / 1024.0;
  }
};

inline StepShape decode_step(int64_t rows, int64_t context) {
  StepShape s;
  for (int64_t i = 0; i < rows; ++i) s.add_chunk(context, 1, 1, false);
  return s;
}

inline StepShape mixed_step(int64_t rows, int64_t context, int64_t prefill_from, int64_t prefill_tokens) {
  StepShape s = decode_step(rows, context);
  s.add_chunk(prefill_from, prefill_tokens, 0, true);
  return s;
}

// Feeds `model` a varied history of decode-only and mixed steps timed by `law`.
inline void train(StepTimeModel& model, const StepCostLaw& law) {
  for (int i = 0; i < 40; ++i) {
    const StepShape d = decode_step(1 + i % 16, 100 + 10 * i);
    model.record(d, law(d));
    const StepShape m = mixed_step(1 + i % 7, 50 + 5 * i, 16 * (i % 5), 16 + 24 * (i % 9));
    model.record(m, law(m));
  }
}

}  // namespace lumen::engine::testing
