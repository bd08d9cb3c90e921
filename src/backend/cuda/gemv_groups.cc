#include "backend/cuda/gemv_groups.h"

namespace lumen::backend::cuda {

std::vector<std::vector<size_t>> gemv_launch_groups(std::span<const GemvGroupCandidate> outputs,
                                                    size_t max_per_launch) {
  std::vector<std::vector<size_t>> launches;
  // The launch still taking outputs of each (type, row bytes): an index into launches, open while
  // it has room. A handful of outputs, so a linear search.
  struct Open {
    tensor::DType type;
    size_t row_bytes;
    size_t launch;
  };
  std::vector<Open> open;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const GemvGroupCandidate& o = outputs[i];
    if (!o.groupable || max_per_launch < 2) {
      launches.push_back({i});
      continue;
    }
    bool placed = false;
    for (Open& g : open) {
      if (g.type == o.type && g.row_bytes == o.row_bytes && launches[g.launch].size() < max_per_launch) {
        launches[g.launch].push_back(i);
        placed = true;
        break;
      }
    }
    if (!placed) {
      std::erase_if(open, [&](const Open& g) { return g.type == o.type && g.row_bytes == o.row_bytes; });
      open.push_back({o.type, o.row_bytes, launches.size()});
      launches.push_back({i});
    }
  }
  return launches;
}

}  // namespace lumen::backend::cuda
