#include "engine/step_time_model.h"

#include <algorithm>
#include <cmath>

#include "util/least_squares.h"

namespace lumen::engine {

void StepShape::add_chunk(int64_t n_computed, int64_t n_tokens, int64_t n_sampled, bool prefill) {
  tokens += n_tokens;
  sampled_rows += n_sampled;
  if (prefill) prefill_tokens += n_tokens;
  // Rows at positions n_computed .. n_computed + n_tokens - 1 attend p + 1 keys each.
  const auto n = static_cast<double>(n_tokens);
  attended += n * static_cast<double>(n_computed) + n * (n + 1) / 2;
}

std::array<double, StepTimeModel::kFeatures> StepTimeModel::features(const StepShape& shape) {
  return {1.0, static_cast<double>(shape.tokens), static_cast<double>(shape.sampled_rows), shape.attended / 1024.0};
}

namespace {

template <typename T>
void put(std::vector<T>& ring, size_t& next, const T& sample, size_t window) {
  if (ring.size() < window) {
    ring.push_back(sample);
  } else {
    ring[next] = sample;
  }
  next = (next + 1) % window;
}

}  // namespace

void StepTimeModel::record(const StepShape& shape, double seconds) {
  if (shape.tokens <= 0 || !(seconds > 0) || !std::isfinite(seconds)) return;
  const Sample sample{features(shape), static_cast<double>(shape.prefill_tokens), seconds};
  if (shape.prefill_tokens > 0) {
    put(prefill_, prefill_next_, sample, kWindow);
  } else {
    put(decode_only_, decode_next_, sample, kWindow);
  }
  refit();
}

void StepTimeModel::refit() {
  // What a prefill token costs is first known from prefill steps of different sizes. Later the
  // prefill window may hold one size only (every chunk at the floor while the decodes alone
  // fill the target): the fit goes on, a prefill token's cost then coming from how much those
  // chunks add to decode-only steps, so the model keeps following the machine's load.
  if (!coefficients_) {
    bool prefill_varies = false;
    for (const Sample& s : prefill_) prefill_varies |= s.prefill_tokens != prefill_.front().prefill_tokens;
    if (!prefill_varies) return;
  }
  util::NormalEquations eq(kFeatures);
  for (const Sample& s : prefill_) eq.add(s.x, s.seconds);
  for (const Sample& s : decode_only_) eq.add(s.x, s.seconds);
  const std::optional<std::vector<double>> beta = eq.solve(kRidge, 1);
  if (!beta) return;
  std::array<double, kFeatures> c{};
  std::copy(beta->begin(), beta->end(), c.begin());
  coefficients_ = c;
}

double StepTimeModel::predict(const StepShape& shape) const {
  if (!coefficients_) return 0;
  const std::array<double, kFeatures> x = features(shape);
  double seconds = (*coefficients_)[0];
  for (size_t i = 1; i < kFeatures; ++i) seconds += std::max(0.0, (*coefficients_)[i]) * x[i];
  return std::max(0.0, seconds);
}

std::vector<double> StepTimeModel::coefficients() const {
  if (!coefficients_) return {};
  return {coefficients_->begin(), coefficients_->end()};
}

}  // namespace lumen::engine
