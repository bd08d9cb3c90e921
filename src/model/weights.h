#pragma once
// The tensors of a transformer, bound by name from a GGUF file and made usable by a backend.
// Shapes are checked against the hyperparameters when bound, so a file with a wrong tensor
// fails at load with the tensor's name rather than producing garbage at run time.
#include <optional>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "gguf/file.h"
#include "model/hparams.h"

namespace lumen::model {

struct LayerWeights {
  backend::TensorView attn_norm;
  backend::TensorView wq, wk, wv, wo;
  std::optional<backend::TensorView> bq, bk, bv;       // qwen2
  backend::TensorView ffn_norm;
  backend::TensorView ffn_gate, ffn_up, ffn_down;
};

struct TransformerWeights {
  backend::TensorView token_embd;
  backend::TensorView output_norm;
  backend::TensorView output;                          // token_embd when the model ties them
  std::optional<backend::TensorView> rope_freqs;       // llama3-style per-pair divisors
  std::vector<LayerWeights> layers;
};

// Finds tensors in a file and checks their shapes (ggml order: {row length, rows}).
class WeightBinder {
 public:
  WeightBinder(const gguf::GgufFile& file, backend::Backend& backend)
      : file_(file), backend_(backend) {}

  backend::TensorView require(const std::string& name, std::vector<int64_t> dims);
  std::optional<backend::TensorView> optional(const std::string& name, std::vector<int64_t> dims);

 private:
  const gguf::GgufFile& file_;
  backend::Backend& backend_;
};

}  // namespace lumen::model
