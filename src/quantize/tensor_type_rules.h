#pragma once
// Which type each tensor of a model gets, as llama-quantize decides it (llama.cpp's
// src/llama-quant.cpp):
//  - tensors that may not be quantized (tensor_category.h) keep their type;
//  - --token-embedding-type / --output-tensor-type win outright for those two tensors;
//  - for the quantized mixes, unless --pure: the output (and token_embd when it doubles as the
//    output) goes to Q6_K, or Q8_0 when its rows are not whole blocks; attention V, attention
//    output and FFN down get more bits by mix and by layer position (with an importance matrix
//    Q4_0 and Q5_0 also give the first eighth of FFN down Q4_1 / Q5_1);
//  - a row length that is not whole blocks of the chosen type falls back to a type with
//    smaller blocks (Q4_K -> Q5_0, Q6_K -> Q8_0...) and finally to F16.
// The rules count attention-V and FFN-down tensors as they see them, so tensors must be
// presented in llama-quantize's order (quantize_order.h).
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quantize/model_facts.h"
#include "quantize/quant_mix.h"
#include "quantize/tensor_category.h"
#include "tensor/dtype.h"

namespace lumen::quantize {

struct TypeChoiceOptions {
  Mix mix = Mix::Q4_K_M;
  std::optional<tensor::DType> output_tensor_type;
  std::optional<tensor::DType> token_embedding_type;
  bool pure = false;  // every quantizable tensor gets the mix's default type (bar fallbacks)
  bool has_imatrix = false;  // an importance matrix is given (changes Q4_0/Q5_0's FFN down)
};

class TensorTypePlanner {
 public:
  TensorTypePlanner(ModelFacts facts, TypeChoiceOptions options);

  // The type tensor `name` (of type `current`, shape `dims`) is written as. Throws lumen::Error
  // where llama.cpp would refuse (an expert tensor whose name has no layer number).
  tensor::DType choose(std::string_view name, tensor::DType current,
                       std::span<const int64_t> dims);

  // One line per tensor whose rows did not fit the chosen type ("blk.0.attn_q.weight: 576
  // columns are not whole blocks of Q4_K, using Q5_0").
  const std::vector<std::string>& fallbacks() const { return fallbacks_; }

 private:
  tensor::DType mix_rule(std::string_view name, TensorCategory category, tensor::DType type,
                         std::span<const int64_t> dims);
  tensor::DType attention_v_rule(tensor::DType type);
  tensor::DType ffn_down_rule(std::string_view name, tensor::DType type);
  tensor::DType attention_output_rule(tensor::DType type) const;
  int layer_of(std::string_view name, int counter) const;
  tensor::DType fallback(std::string_view name, int64_t columns, tensor::DType type);

  ModelFacts facts_;
  TypeChoiceOptions options_;
  int i_attention_v_ = 0;
  int i_ffn_down_ = 0;
  int i_ffn_gate_ = 0;
  int i_ffn_up_ = 0;
  std::vector<std::string> fallbacks_;
};

}  // namespace lumen::quantize
