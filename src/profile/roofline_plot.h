#pragma once
// The roofline chart as a PNG (drawn with cairo): log-log axes of arithmetic intensity and
// GFLOP/s, the measured bandwidth roof and the f32 and int8 peaks, and one dot per op of each
// profiled step shape, labelled. Ops that compute nothing (copies) have no place on it.
#include <string>
#include <vector>

#include "profile/machine_ceilings.h"
#include "profile/step_breakdown.h"

namespace lumen::profile {

struct PlottedStep {
  std::string label;  // "decode batch 1 at context 128"
  const StepBreakdown* breakdown = nullptr;
};

// Throws lumen::Error when the file cannot be written.
void write_roofline_png(const std::string& path, const MachineCeilings& ceilings, const std::vector<PlottedStep>& steps,
                        const std::string& title);

}  // namespace lumen::profile
