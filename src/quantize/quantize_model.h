#pragma once
// `lumen quantize`: rewrites a GGUF model with its tensors in the types a file type (mix)
// calls for, as llama-quantize does without an importance matrix, byte for byte: the same
// per-tensor types (tensor_type_rules.h), the same quantized bytes (tensor/quantize.h's
// quantize_row_ggml), the same tensor order, the metadata copied with general.file_type and
// general.quantization_version set.
//
// Every tensor's type is decided, and every refusal made, before anything is written. Tensors
// then stream one at a time from the mapped input into the output, which is written under a
// temporary name and renamed into place, so a failure never leaves a partial file behind.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "quantize/quant_mix.h"
#include "quantize/tensor_conversion.h"
#include "tensor/dtype.h"

namespace lumen::quantize {

struct QuantizeOptions {
  Mix mix = Mix::Q4_K_M;
  unsigned threads = 0;  // 0: one per hardware thread
  bool allow_requantize = false;
  bool pure = false;
  std::optional<tensor::DType> output_tensor_type;
  std::optional<tensor::DType> token_embedding_type;
  // An importance matrix (imatrix_file.h) to weight the quantization with, as llama-quantize
  // --imatrix does; empty: none.
  std::string imatrix_path;
  bool measure_error = false;  // fill QuantizeReport::errors (costs a dequantize of the output)
};

struct TensorPlanEntry {
  std::string name;
  std::vector<int64_t> dims;
  tensor::DType from;
  tensor::DType to;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
};

struct QuantizePlan {
  std::vector<TensorPlanEntry> tensors;  // in the order they are written
  std::vector<std::string> fallbacks;    // tensors whose rows did not fit the mix's type
  bool requantizes = false;              // some already-quantized tensor is converted
  std::vector<std::string> without_importance;  // quantized tensors the imatrix has no entry for
};

struct QuantizeReport {
  QuantizePlan plan;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  uint64_t elements = 0;
  // With measure_error: per plan entry, how far its written values are from the input's (zero
  // sums for a tensor copied as it is).
  std::vector<TensorError> errors;
};

// Called as each tensor is written: its entry, its index in plan.tensors, their count.
using TensorProgress = std::function<void(const TensorPlanEntry&, size_t index, size_t count)>;

// Throws lumen::Error for an unreadable or broken input, an unreadable imatrix or one made for
// another model (an entry naming no tensor of the input, or of another width, or no entry for
// any quantized tensor), a tensor that would need requantizing
// without allow_requantize, a type without kernels, an override type whose blocks do not fit a
// tensor's rows, or an output that cannot be written.
QuantizeReport quantize_model(const std::string& in_path, const std::string& out_path,
                              const QuantizeOptions& options, const TensorProgress& progress = {});

}  // namespace lumen::quantize
