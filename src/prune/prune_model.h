#pragma once
// A GGUF model with only some of its layers, which Lumen and llama.cpp load as a model of that
// many layers (LayerSkip / Draft & Verify's draft as its own file, usable as any engine's draft
// model). What changes:
//  - {arch}.block_count becomes the number of kept layers;
//  - every {arch}.* array with one entry per layer (per-layer head counts or FFN widths, a
//    per-layer sliding-window flag list) keeps the kept layers' entries;
//  - {arch}.leading_dense_block_count (DeepSeek-style dense first layers) counts the kept ones;
//  - the kept layers' tensors blk.<i>.* are renumbered blk.0.*, blk.1.*, ... in order, the
//    others dropped; every other tensor and key is copied as it is, in the input's order.
// Layers renumbered past a gap would change which layers a periodic sliding-window pattern
// makes local, so a model with sliding-window attention may only keep a prefix.
#include <cstdint>
#include <string>
#include <vector>

namespace lumen::prune {

struct PruneReport {
  uint64_t layers_in = 0;
  uint64_t layers_out = 0;
  size_t tensors_in = 0;
  size_t tensors_out = 0;
  uint64_t bytes_in = 0;   // tensor data
  uint64_t bytes_out = 0;
  std::vector<std::string> per_layer_keys;  // the arrays cut to the kept layers
};

// `keep`: ascending, distinct layer indices of the input. Writes `out_path` through a temporary
// name (nothing is left under it on failure). Throws lumen::Error naming the problem.
PruneReport prune_model(const std::string& in_path, const std::string& out_path, const std::vector<uint64_t>& keep);

}  // namespace lumen::prune
