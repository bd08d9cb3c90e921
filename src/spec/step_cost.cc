#include "spec/step_cost.h"

#include <algorithm>

namespace lumen::spec {

void StepCost::record(int64_t draft_tokens, double seconds) {
  if (draft_tokens < 0 || !(seconds > 0)) return;
  const auto x = static_cast<double>(draft_tokens);
  w_ = kForget * w_ + 1;
  sx_ = kForget * sx_ + x;
  sy_ = kForget * sy_ + seconds;
  sxx_ = kForget * sxx_ + x * x;
  sxy_ = kForget * sxy_ + x * seconds;
  const double spread = w_ * sxx_ - sx_ * sx_;
  // Too little spread in the draft lengths seen: the slope would be noise.
  if (spread <= 1e-6 * w_ * w_) return;
  const double slope = (w_ * sxy_ - sx_ * sy_) / spread;
  const double base = (sy_ - slope * sx_) / w_;
  if (!(base > 0)) return;
  // A machine whose other load spikes can make one sample absurd; a draft token costing more
  // than two plain steps is no measurement worth steering by.
  cost_ = std::clamp(slope / base, 0.0, 2.0);
  known_ = true;
}

}  // namespace lumen::spec
