// A model split over two backends (model/backend_split.h): which weights each backend binds,
// the second backend's part, and the seam between them.
#include <fmt/format.h>

#include <algorithm>
#include <vector>

#include "model/backend_needs.h"
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using backend::first_rows;
using backend::TensorView;

// The model-wide tensors the output head reads; every other one feeds the first layer.
bool output_tensor(const std::string& name) { return name == "output_norm.weight" || name == "output.weight"; }

}  // namespace

void Transformer::bind_split(const gguf::GgufFile& file, const BackendSplit& split) {
  if (split.first_layer > hp_.block_count) {
    fail("a model of {} layers cannot start its second backend at layer {}", hp_.block_count, split.first_layer);
  }
  if (arch_.features.encoder) fail("the {} architecture (an encoder) runs on one backend only", hp_.architecture);
  if (arch_.features.mixer != Mixer::Attention) {
    // Their recurrent states live in one backend's memory (model/state_cache.h).
    fail("the {} architecture (state-space layers) runs on one backend only for now", hp_.architecture);
  }
  layers_ = {0, split.first_layer};
  const uint64_t first = split.first_layer;
  // The embedding table and this part's layers; a tied output matrix is the second part's copy.
  weights_ =
      bind_weights(file, arch_, hp_, backend_, {}, [first](const std::string& name, bool per_layer, uint64_t layer) {
        return per_layer ? layer < first : !output_tensor(name);
      });
  init();
  offload_.reset(new Transformer(OffloadPart{}, *split.second, file, hp_, {first, hp_.block_count}));
  split_ = split;
}

Transformer::Transformer(OffloadPart, backend::Backend& backend, const gguf::GgufFile& file, const HParams& hp,
                         LayerRange layers)
    : backend_(backend), hp_(hp), arch_(architecture_for(hp)) {
  // Refused at load, as the first backend's needs are: the whole model's, conservatively (the
  // embedding lookup, which the first backend runs, counts too).
  backend_.require(model_backend_needs(file, arch_, hp_), fmt::format("the {} model", hp_.architecture));
  layers_ = layers;
  const bool tied = file.find_tensor("output.weight") == nullptr;
  weights_ = bind_weights(file, arch_, hp_, backend_, {}, [&](const std::string& name, bool per_layer, uint64_t layer) {
    if (per_layer) return layer >= layers.first && layer < layers.end;
    if (name == "token_embd.weight") return tied;  // the output head's matrix when tied
    return true;                                   // output norm and matrix, rope factors
  });
  init();
}

void Transformer::hand_over(int64_t n) {
  const TensorView from = first_rows(s_.x, n);
  TensorView to = first_rows(offload_->s_.x, n);
  backend::Backend& next = offload_->backend_;
  // One copy whenever either side is host memory (the CPU backend's buffers are): the device
  // side copies straight from or into the host side's rows.
  if (!next.device_memory()) {
    backend_.copy_to_host(from, static_cast<float*>(to.data));
  } else if (!backend_.device_memory()) {
    next.copy_from_host(static_cast<const float*>(from.data), to);
  } else {
    std::vector<float> staged(static_cast<size_t>(from.elements()));
    backend_.copy_to_host(from, staged.data());
    next.copy_from_host(staged.data(), to);
  }
}

Transformer& Transformer::run_all_layers(const ForwardBatch& batch, KvCache& cache, int64_t n) {
  run_layers(batch, cache, n);
  if (!offload_) return *this;
  hand_over(n);
  offload_->run_layers(batch, cache, n);
  return *offload_;
}

const ExpertLoad* Transformer::expert_load() const {
  if (!moe_) return nullptr;
  if (!offload_) return &moe_->load();
  // Each part counts the layers it runs; the other's entries stay zero.
  merged_load_ = moe_->load();
  const ExpertLoad& second = offload_->moe_->load();
  for (size_t i = 0; i < merged_load_.tokens.size() && i < second.tokens.size(); ++i) {
    merged_load_.tokens[i] += second.tokens[i];
  }
  return &merged_load_;
}

void Transformer::reset_expert_load() {
  if (moe_) moe_->reset_load();
  std::fill(attention_rows_per_rank_.begin(), attention_rows_per_rank_.end(), 0);
  if (offload_) offload_->reset_expert_load();
}

}  // namespace lumen::model
