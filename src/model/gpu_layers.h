#pragma once
// --n-gpu-layers (llama.cpp's -ngl) as a split of the model over the CPU and a GPU
// (model/backend_split.h). llama.cpp counts a model of L layers as L + 1 units, its layers and
// its output head, and N puts the last N of them on the GPU: the output head first (the largest
// matmul of a decode step), then the layers from the last one back. The token embedding stays
// in host memory (a lookup of a few rows needs no GPU, and its table can be large). So N = 0
// runs everything on the CPU, N = 1 the output head alone on the GPU, N = L + 1 every layer
// and the head. The automatic choice is the largest N whose weights and K/V fit the device.
#include <cstdint>
#include <span>
#include <vector>

#include "gguf/file.h"
#include "model/hparams.h"
#include "tensor/dtype.h"

namespace lumen::model {

// The first layer the GPU runs (BackendSplit::first_layer) for N units on it: L + 1 - N, so L
// when only the head is there. Throws lumen::Error for N < 1 or N > L + 1 (naming the largest).
uint64_t first_gpu_layer(uint64_t n_layers, int64_t n_gpu_layers);

// What each unit would take on the device.
struct GpuLayerBytes {
  std::vector<uint64_t> layer_weights;  // per layer: the bytes of its tensors (blk.N.*)
  uint64_t output_weights = 0;          // the output norm and matrix (the embedding table when tied)
  uint64_t kv_per_layer = 0;            // one layer's K/V for the requested context
};

// From the file's tensor sizes, and K/V of `kv_type` for `context_tokens` positions in every
// layer (a sliding-window layer counted at full length: the bound, not the expectation).
GpuLayerBytes gpu_layer_bytes(const gguf::GgufFile& file, const HParams& hp, int64_t context_tokens,
                              tensor::DType kv_type);

// The largest N (0 .. L + 1) whose units, taken from the output head back, fit in `budget_bytes`
// once `reserve_bytes` (activations, workspaces) are set aside: the head's weights, then each
// layer's weights and K/V.
int64_t auto_gpu_layers(uint64_t budget_bytes, uint64_t reserve_bytes, const GpuLayerBytes& bytes);

}  // namespace lumen::model
