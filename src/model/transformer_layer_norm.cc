// The parts of a LayerNorm decoder (BlockFeatures::layer_norm: BLOOM) that differ from the
// RMS-norm blocks of model/transformer.cc: its norms (LayerNorm with bias: the backend's
// layer_norm) and its plain GELU FFN with biases. (Its fused QKV matrix is read as three by
// transformer_fused_weights.cc.)
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {

using backend::TensorView;

void Transformer::block_norm(const TensorView& x, const TensorView& weight, const std::optional<TensorView>& bias,
                             TensorView& out) {
  if (!arch_.features.layer_norm) {
    backend_.rms_norm(x, weight, static_cast<float>(hp_.norm_eps), out);
    return;
  }
  if (!bias) fail("the {} architecture's LayerNorm has no bias tensor", hp_.architecture);
  backend_.layer_norm(x, weight, *bias, static_cast<float>(hp_.norm_eps), out);
}

void Transformer::gelu_ffn(const LayerWeights& w, TensorView& h, TensorView& up) {
  observe(w.ffn_up, h);
  backend_.matmul(w.ffn_up, h, up);
  if (w.ffn_up_b) backend_.add_row(up, *w.ffn_up_b);
  backend_.gelu_tanh(up);
  observe(w.ffn_down, up);
  backend_.matmul(w.ffn_down, up, h);
  if (w.ffn_down_b) backend_.add_row(h, *w.ffn_down_b);
}

}  // namespace lumen::model
