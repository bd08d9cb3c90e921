#pragma once
// Synthetic models: random weights in the exact tensor shapes and names of a preset, plus a
// real vocabulary copied from another GGUF so the result tokenizes and runs like a real model.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace lumen::model {

struct SynthOptions {
  std::string preset;                       // a name from presets()
  tensor::DType type = tensor::DType::Q4_0; // type of the 2-D weight matrices
  std::string vocab_path;                   // GGUF to copy tokenizer.* from (required)
  uint64_t seed = 1;
  std::optional<uint64_t> block_count;      // fewer layers, for quick tests
  unsigned threads = 0;                     // 0: all hardware threads
  // With type Q4_K: llama.cpp's Q4_K_M mixture instead of Q4_K throughout, typed by the rules
  // `lumen quantize` follows (Q6_K for the output matrix, or the token embedding doubling as it,
  // and for attn_v and ffn_down in the layers its recipe gives more bits; its fallbacks where
  // rows are not whole super-blocks): the mix of the Q4_K_M files users download.
  bool q4_k_m = false;
  // With type Q8_0: llama-quantize's MXFP4_MOE instead, every expert tensor (3-D) in MXFP4 and
  // the other matrices Q8_0 (gpt-oss's published files).
  bool mxfp4_moe = false;
};

struct SynthReport {
  uint64_t tensors = 0;
  uint64_t file_bytes = 0;
  uint64_t vocab_size = 0;
  // Matrices whose rows are not whole blocks of the chosen type get a compatible one instead,
  // as llama.cpp's quantizer does; each such substitution is listed here.
  std::vector<std::string> substitutions;
};

// Throws lumen::Error on a bad option or an unreadable vocabulary file.
SynthReport write_synthetic_model(const SynthOptions& options, const std::string& out_path);

}  // namespace lumen::model
