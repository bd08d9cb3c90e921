#pragma once
// Multi-head latent attention (DeepSeek-V2/V3) of one layer over a flat batch, in the absorbed
// form llama.cpp runs it (the architecture file, model/arch/deepseek2.cc, describes the
// weights):
//   q = wq h (or wq_b norm(wq_a h)), split per head into a non-rotated and a rotated part;
//   [latent | rope key] = wkv_a_mqa h; the latent is normed and the rope key rotated: that row is
//   all the cache keeps per position, for every head;
//   each head's query becomes [wk_b^T q_nope | rope(q_rope)], a query in the cached row's space,
//   so attention reads each cached row once for all heads (one "KV head") and gives each head a
//   latent output, the probability-weighted sum of the rows' latent parts;
//   wv_b turns each head's latent output into its value, and wo mixes the heads.
// Compared with caching every head's K and V this stores (kv_lora_rank + rope dims) values per
// position and layer instead of heads x (key + value) dims: 576 against 16 x 320 for V2-Lite.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"
#include "model/weights.h"

namespace lumen::model {

// The attention scale llama.cpp's deepseek2 graph uses: mscale^2 / sqrt(key_length_mla), where
// mscale carries the file's attention factor and, under YaRN with
// rope.scaling.yarn_log_multiplier, DeepSeek's 1 + 0.1 m ln(factor), in llama.cpp's f32 order.
float latent_attention_scale(const HParams& hp);

class LatentAttention {
 public:
  LatentAttention(backend::Backend& backend, const HParams& hp, const backend::RopeConfig& rope);

  // out (f32 {embedding, n}) = the layer's attention of h (its normed input, {embedding, n}),
  // after the output projection; this batch's latent rows are stored in `cache` first.
  void forward(const LayerWeights& w, const backend::TensorView& h, std::span<const int32_t> positions,
               std::span<const backend::SequenceSlice> sequences, backend::KvLayer& cache, backend::TensorView& out);

 private:
  void ensure_capacity(int64_t n);

  backend::Backend& backend_;
  backend::RopeConfig rope_;
  backend::AttentionConfig attention_;
  int64_t heads_, q_lora_, rank_, rope_dims_, key_mla_, nope_, value_mla_;
  float eps_;
  int64_t capacity_ = 0;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  backend::TensorView q_a_, q_, latent_, query_, latent_out_, values_;
  std::vector<int32_t> iota_;  // row ids for copying the rotated query parts
};

}  // namespace lumen::model
