#include "engine/step_time_budget.h"

#include <algorithm>
#include <cmath>

#include "util/error.h"

namespace lumen::engine {

StepTimeBudget::StepTimeBudget(const StepTimeModel& model, double max_step_seconds, int64_t min_prefill_tokens)
    : model_(model), max_step_seconds_(max_step_seconds), min_prefill_tokens_(min_prefill_tokens) {
  if (!(max_step_seconds > 0) || !std::isfinite(max_step_seconds)) {
    fail("the step time target must be a positive number of seconds (got {})", max_step_seconds);
  }
  if (min_prefill_tokens <= 0) fail("the prefill floor must be positive (got {})", min_prefill_tokens);
}

void StepTimeBudget::start() {
  shape_ = {};
  live_decodes_ = 0;
}

void StepTimeBudget::add(const Sequence& seq, int64_t n_tokens, int64_t n_sampled) {
  shape_.add_chunk(seq.n_computed, n_tokens, n_sampled, !seq.decoding());
  if (is_live_decode(seq)) ++live_decodes_;
}

namespace {

// The largest n in [0, wanted] with fits(n), for fits true at 0 and monotone.
template <typename Fits>
int64_t largest_fitting(int64_t wanted, Fits fits) {
  int64_t lo = 0;
  int64_t hi = wanted;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (fits(mid)) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

}  // namespace

int64_t StepTimeBudget::prefill_room(const Sequence& seq, int64_t wanted) const {
  if (wanted <= 0) return 0;
  if (live_decodes_ == 0) return wanted;
  const int64_t floor_left = std::max<int64_t>(0, min_prefill_tokens_ - shape_.prefill_tokens);
  if (!model_.ready()) return std::min(wanted, floor_left);
  const int64_t uncomputed = seq.uncomputed();
  const bool prefill = !seq.decoding();
  const int64_t fit = largest_fitting(wanted, [&](int64_t n) {
    StepShape s = shape_;
    s.add_chunk(seq.n_computed, n, n == uncomputed ? 1 : 0, prefill);
    return model_.predict(s) <= max_step_seconds_;
  });
  return std::min(wanted, std::max(fit, floor_left));
}

int64_t StepTimeBudget::draft_room(const Sequence& seq, int64_t chunk_tokens, int64_t wanted) const {
  if (wanted <= 0) return 0;
  if (live_decodes_ == 0) return wanted;
  if (!model_.ready()) return wanted;
  return largest_fitting(wanted, [&](int64_t n) {
    StepShape s = shape_;
    s.add_chunk(seq.n_computed + chunk_tokens, n, n, false);
    return model_.predict(s) <= max_step_seconds_;
  });
}

void StepTimeBudget::add_draft(const Sequence& seq, int64_t chunk_tokens, int64_t n) {
  shape_.add_chunk(seq.n_computed + chunk_tokens, n, n, false);
}

}  // namespace lumen::engine
