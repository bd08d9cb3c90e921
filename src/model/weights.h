#pragma once
// The tensors of a transformer, bound by name from a GGUF file and made usable by a backend.
// Shapes are checked against the hyperparameters when bound, so a file with a wrong tensor
// fails at load with the tensor's name rather than producing garbage at run time.
#include <optional>
#include <set>
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
  // The same for tensors the kernels read as plain floats (norm weights, rope frequency
  // factors): any other element type is an error, not an out-of-bounds read.
  backend::TensorView require_f32(const std::string& name, std::vector<int64_t> dims);
  std::optional<backend::TensorView> optional_f32(const std::string& name, std::vector<int64_t> dims);

  // Throws lumen::Error naming the first tensor of the file no binding asked for: metadata and
  // tensors disagree (e.g. blocks beyond block_count), as llama.cpp refuses too.
  void check_all_bound() const;

 private:
  const gguf::GgufFile& file_;
  backend::Backend& backend_;
  std::set<std::string> bound_;
};

}  // namespace lumen::model
