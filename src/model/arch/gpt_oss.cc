// gpt-oss (general.architecture "gpt-oss"), OpenAI's open-weight mixture of experts (20B, 120B),
// as llama.cpp's openai-moe graph runs it:
//  - attention with biases on q, k, v and the output projection, a query wider than the
//    embedding (64 heads of 64 for 2880), NeoX rope with the file's YaRN scaling on every layer,
//  - a learned sink logit per head (attn_sinks) in each attention softmax,
//  - sliding-window (128) and full-attention layers alternating, the first local,
//  - the pre-FFN RMS norm stored as post_attention_norm (the converter's name for it),
//  - a mixture-of-experts FFN: the router's logits plus a bias choose the experts_used_count
//    largest, weighted by a softmax over those chosen logits only; each expert's gate, up and
//    down have biases, and its activation is the clamped SwiGLU (Activation::SwiGluOai),
//  - an output matrix of its own.
// Its experts ship in MXFP4 (tensor/quant_mxfp4.cc). The tokenizer (o200k, tokenizer.ggml.pre
// "gpt-4o") and the harmony chat format are the tokenizer's and the template's business.
#include "model/arch/architecture.h"
#include "model/arch/experts.h"

namespace lumen::model {

Architecture gpt_oss_architecture() {
  using enum Dim;
  using enum TensorRole;
  using TW = TransformerWeights;
  using LW = LayerWeights;
  Architecture arch;
  arch.name = "gpt-oss";
  arch.features.rope_neox = true;
  // Layer i is global when (i + 1) % 2 == 0: even layers local, odd ones global (llama.cpp's
  // swa pattern 2); a file's {arch}.rope.freq_base_swa gives the local layers their base.
  arch.features.sliding_window = SlidingWindow::Pattern;
  arch.features.sliding_window_period = 2;
  arch.features.local_rope_base_from_file = true;
  arch.features.attention_sinks = true;
  // Its YaRN keeps the correction range's computed ends (config.json's "truncate": false, which
  // no GGUF key carries): transformers and OpenAI's reference compute it so; llama.cpp floors
  // and ceils them as for every other model, off by up to 0.04 in a log-probability on a tiny
  // random model (scripts/check_arch_transformers.py gpt_oss).
  arch.features.yarn_truncate = false;
  arch.features.ffn = FfnKind::MixtureOfExperts;
  arch.features.activation = Activation::SwiGluOai;
  arch.features.expert_gating = ExpertGating::SoftmaxWeight;
  arch.tensors = {
      model_tensor("token_embd.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::token_embd),
      layer_tensor("attn_norm.weight", {Embedding}, Norm, &LW::attn_norm),
      layer_tensor("attn_q.weight", {Embedding, QWidth}, Matrix, &LW::wq),
      layer_tensor("attn_q.bias", {QWidth}, Bias, &LW::bq),
      layer_tensor("attn_k.weight", {Embedding, KvWidth}, Matrix, &LW::wk),
      layer_tensor("attn_k.bias", {KvWidth}, Bias, &LW::bk),
      layer_tensor("attn_v.weight", {Embedding, KvWidth}, Matrix, &LW::wv),
      layer_tensor("attn_v.bias", {KvWidth}, Bias, &LW::bv),
      layer_tensor("attn_output.weight", {QWidth, Embedding}, Matrix, &LW::wo),
      layer_tensor("attn_output.bias", {Embedding}, Bias, &LW::bo),
      layer_tensor("attn_sinks.weight", {Heads}, Bias, &LW::attn_sinks),
      layer_tensor("post_attention_norm.weight", {Embedding}, Norm, &LW::ffn_norm),
  };
  const std::vector<TensorSpec> experts = expert_tensors(ExpertFeedForward);
  arch.tensors.insert(arch.tensors.end(), experts.begin(), experts.end());
  arch.tensors.insert(arch.tensors.end(),
                      {
                          layer_tensor("ffn_gate_inp.bias", {Experts}, Bias, &LW::ffn_gate_inp_b),
                          layer_tensor("ffn_gate_exps.bias", {ExpertFeedForward, Experts}, Bias, &LW::ffn_gate_exps_b),
                          layer_tensor("ffn_down_exps.bias", {Embedding, Experts}, Bias, &LW::ffn_down_exps_b),
                          layer_tensor("ffn_up_exps.bias", {ExpertFeedForward, Experts}, Bias, &LW::ffn_up_exps_b),
                          model_tensor("output_norm.weight", {Embedding}, Norm, Presence::Required, &TW::output_norm),
                          model_tensor("output.weight", {Embedding, Vocab}, Matrix, Presence::Required, &TW::output),
                      });
  return arch;
}

}  // namespace lumen::model
