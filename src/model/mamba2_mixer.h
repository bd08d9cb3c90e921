#pragma once
// Mamba 2's mixer, the whole of a Mamba 2 block between its RMS norm and the residual add, as
// llama.cpp computes it: the input projection split into z, the convolution's input (x, B, C)
// and dt; the causal depthwise convolution with bias and SiLU; the selective scan with the D
// skip; y * silu(z); an RMS norm per group of the inner width; the output projection. Each
// sequence of the batch runs from its own recurrent state (model/state_cache.h), which the
// convolution and the scan advance.
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/forward_batch.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace lumen::model {

class StateCache;

class Mamba2Mixer {
 public:
  Mamba2Mixer(backend::Backend& backend, const HParams& hp);

  // Zeroes the slots of the batch's sequences that start at position 0, and checks the batch
  // carries a slot per sequence: once per forward pass, before the first layer.
  void begin_batch(const ForwardBatch& batch);
  // h (f32 {embedding, n}, the normed block input) becomes the mixer's output.
  void forward(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, backend::TensorView& h);

 private:
  void ensure_capacity(int64_t n);

  backend::Backend& backend_;
  HParams hp_;
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  backend::TensorView zxbcdt_, xbc_, y_;
  std::vector<backend::SsmSequence> seqs_;
};

}  // namespace lumen::model
