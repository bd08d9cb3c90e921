#include "profile/roofline.h"

#include <algorithm>

namespace lumen::profile {

double peak_for(const OpCost& cost, const MachineCeilings& ceilings) {
  return cost.int8 ? ceilings.int8_gops : ceilings.fp32_gflops;
}

RooflinePoint roofline_point(const OpCost& cost, double seconds, const MachineCeilings& ceilings) {
  RooflinePoint p;
  if (seconds <= 0) return p;
  p.gbps = cost.bytes / seconds / 1e9;
  p.achieved = cost.flops / seconds / 1e9;
  if (cost.bytes <= 0) return p;
  p.intensity = cost.flops / cost.bytes;
  const double peak = peak_for(cost, ceilings);
  const double memory_roof = p.intensity * ceilings.read_gbps;
  p.memory_bound = memory_roof < peak;
  p.attainable = std::min(peak, memory_roof);
  if (cost.flops > 0 && p.attainable > 0) {
    p.efficiency = p.achieved / p.attainable;
  } else if (ceilings.read_gbps > 0) {
    p.efficiency = p.gbps / ceilings.read_gbps;
  }
  return p;
}

}  // namespace lumen::profile
