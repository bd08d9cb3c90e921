#pragma once
// What distinguishes one decoder-only architecture from another, as data: the forward pass in
// model/transformer.cc reads these switches, and adding an architecture is one file under
// model/arch/ that fills them in, plus a line in model/arch/registry.cc.
#include <functional>
#include <string>

#include "backend/backend.h"
#include "gguf/file.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace lumen::model {

enum class Activation { SwiGlu, GeGlu };

struct ArchitectureConfig {
  std::string name;
  bool rope_neox = false;         // rotate (i, i + d/2) pairs
  bool qkv_bias = false;
  Activation activation = Activation::SwiGlu;
  // Binds every tensor the architecture uses.
  std::function<TransformerWeights(WeightBinder&, const HParams&)> bind_weights;
};

// Throws lumen::Error for an architecture Lumen cannot run.
ArchitectureConfig architecture_for(const HParams& hp);

}  // namespace lumen::model
