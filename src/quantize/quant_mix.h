#pragma once
// The file types `lumen quantize` can write, as llama-quantize names them: a single tensor
// type (Q4_0, Q8_0, F16...) or a K-quant "mix" (Q4_K_M...) in which some tensors are kept at
// higher precision (tensor_type_rules.h). Each carries llama.cpp's llama_ftype number, which
// goes into general.file_type, and its default tensor type.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "tensor/dtype.h"

namespace lumen::quantize {

enum class Mix {
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q2_K,
  Q3_K_S,
  Q3_K_M,
  Q3_K_L,
  Q4_K_S,
  Q4_K_M,
  Q5_K_S,
  Q5_K_M,
  Q6_K,
  IQ4_NL,
  IQ4_XS,
  F16,
  BF16,
  F32,
};

struct MixInfo {
  Mix mix;
  std::string_view name;
  uint32_t llama_ftype;       // general.file_type
  tensor::DType default_type; // the type of every tensor no rule treats differently
};

const MixInfo& mix_info(Mix mix);
std::optional<Mix> mix_from_name(std::string_view name);  // case-insensitive
std::string mix_names();  // "Q4_0, Q4_1, ..." for help and error messages
// The name of a general.file_type number (llama_ftype), e.g. 15 -> "Q4_K_M"; nullopt if unknown.
std::optional<std::string_view> mix_name_for_ftype(uint32_t llama_ftype);

// Whether a type is block-quantized (as ggml_is_quantized: not F32, F16, BF16 or an integer).
bool is_quantized(tensor::DType type);

}  // namespace lumen::quantize
