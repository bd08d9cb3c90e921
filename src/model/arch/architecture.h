#pragma once
// An architecture as data: the tensors it declares and the block features the forward pass in
// model/transformer.cc reads. Adding an architecture is one file under model/arch/ that returns
// an Architecture, plus a line in model/arch/registry.cc (CONTRIBUTING.md, "Add an architecture", has the recipe).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "model/arch/block_features.h"
#include "model/arch/tensor_spec.h"
#include "model/hparams.h"

namespace lumen::model {

struct Architecture {
  std::string name;  // general.architecture
  // A variant of `name` that files select by their hyperparameters (Mixtral: "llama" with
  // experts): its registry name (presets and tests name it; empty: `name`) and the test.
  std::string variant;
  bool (*applies)(const HParams& hp) = nullptr;  // null: every file of `name` not taken before
  BlockFeatures features;
  // In file order: `lumen synth` writes them so, per-layer runs once per layer.
  std::vector<TensorSpec> tensors;

  // The registry name: unique, what presets and find_architecture use.
  const std::string& id() const { return variant.empty() ? name : variant; }
};

// The registered architecture named by hp.architecture (the first of its variants whose test
// accepts hp); throws lumen::Error for one Lumen cannot run, listing those it can.
const Architecture& architecture_for(const HParams& hp);
// nullptr when none is registered under this id (Architecture::id).
const Architecture* find_architecture(std::string_view id);
// Every registered id, in registry order.
std::vector<std::string> architecture_names();

// Throws lumen::Error naming the first feature the architecture (or the file's hyperparameters
// for it) asks for that the forward pass does not implement.
void require_supported_features(const Architecture& arch, const HParams& hp);

// The soft caps a model runs with (0: none): the architecture's, or the file's where the
// architecture reads the keys (BlockFeatures::logit_softcap_from_file, attention_softcap_from_file).
struct Softcaps {
  float attention = 0.0f;
  float final_logits = 0.0f;
};
Softcaps resolved_softcaps(const Architecture& arch, const HParams& hp);

// The window each layer attends through (0: every earlier position), from the architecture's
// pattern and the file's {arch}.attention.sliding_window; the key is ignored, with a notice on
// stderr, by architectures that declare no sliding window.
std::vector<int64_t> layer_sliding_windows(const Architecture& arch, const HParams& hp);

}  // namespace lumen::model
