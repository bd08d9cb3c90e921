#pragma once
// The roofline model (Williams, Waterman and Patterson, 2009): an op that does F FLOPs over B
// bytes (arithmetic intensity I = F / B) can at best run at min(peak, I x bandwidth). Which
// peak applies depends on the op: int8 dot products for quantized matmuls, f32 otherwise.
#include "profile/machine_ceilings.h"
#include "profile/op_cost.h"

namespace lumen::profile {

struct RooflinePoint {
  double intensity = 0;   // FLOPs per byte
  double achieved = 0;    // GFLOP/s
  double gbps = 0;        // achieved GB/s
  double attainable = 0;  // GFLOP/s the ceilings allow at this intensity
  bool memory_bound = false;  // the bandwidth roof is the lower one at this intensity
  // achieved / attainable; for an op without FLOPs (a copy), achieved GB/s over the bandwidth.
  double efficiency = 0;
};

double peak_for(const OpCost& cost, const MachineCeilings& ceilings);
RooflinePoint roofline_point(const OpCost& cost, double seconds, const MachineCeilings& ceilings);

}  // namespace lumen::profile
