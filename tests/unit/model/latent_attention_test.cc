// Multi-head latent attention's pieces that are not the forward pass (the forward pass is held
// to llama.cpp's logits by the golden test): the KV cache's size and block moves when the values
// are a view of the keys, and the attention scale under DeepSeek's YaRN.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "model/kv_cache.h"
#include "model/latent_attention.h"

namespace lumen::model {
namespace {

// DeepSeek-V2-Lite's attention sizes (27 layers, 16 heads, latent 512 + rope 64, per-head keys
// of 128 + 64 and values of 128), as llama.cpp's converter writes them.
HParams v2_lite() {
  HParams hp;
  hp.architecture = "deepseek2";
  hp.block_count = 27;
  hp.head_count = 16;
  hp.head_count_kv = 1;
  hp.kv_lora_rank = 512;
  hp.rope_dimension_count = 64;
  hp.head_dim = 576;
  hp.value_dim = 512;
  hp.key_length_mla = 192;
  hp.value_length_mla = 128;
  return hp;
}

TEST(LatentKvCache, HoldsOneLatentRowPerPositionAndLayer) {
  const HParams hp = v2_lite();
  ASSERT_TRUE(is_mla(hp));
  // f16: 576 values per position and layer, against 16 heads x (192 + 128) for the same model
  // with its keys and values decompressed (what llama.cpp's older layout cached).
  EXPECT_EQ(KvCache::bytes_per_block(hp, 16), 27u * 16u * 576u * 2u);
  HParams mha = hp;
  mha.kv_lora_rank = mha.key_length_mla = mha.value_length_mla = 0;
  mha.head_count_kv = 16;
  mha.head_dim = 160;  // (192 + 128) / 2: the same bytes as separate K of 192 and V of 128
  EXPECT_EQ(KvCache::bytes_per_block(mha, 16), 27u * 16u * 16u * 320u * 2u);
  EXPECT_NEAR(static_cast<double>(KvCache::bytes_per_block(mha, 16)) / static_cast<double>(KvCache::bytes_per_block(hp, 16)),
              8.89, 0.01);

  backend::CpuBackend backend(1);
  HParams two_layers = hp;
  two_layers.block_count = 2;
  KvCache cache(backend, two_layers, 4, 16);
  EXPECT_EQ(cache.bytes(), 4u * KvCache::bytes_per_block(two_layers, 16));  // 4 blocks
  EXPECT_TRUE(backend::values_in_keys(cache.layer(0)));
  EXPECT_EQ(cache.layer(0).v.dims[0], 512);
}

TEST(LatentKvCache, BlockMovesCarryTheLatentRowsWhole) {
  backend::CpuBackend backend(1);
  HParams hp = v2_lite();
  hp.block_count = 2;
  KvCache cache(backend, hp, 3, 4);
  ASSERT_EQ(cache.block_host_bytes(), 2u * 4u * 576u * 2u);  // keys only: V is a view of them
  std::vector<uint8_t> in(cache.block_host_bytes()), out(cache.block_host_bytes(), 0);
  std::iota(in.begin(), in.end(), uint8_t{7});
  cache.write_block(1, in.data());
  cache.copy_block(1, 2);
  cache.read_block(2, out.data());
  EXPECT_EQ(in, out);
  // The values seen through the V view are the keys' leading 512 values.
  const backend::KvLayer& layer = cache.layer(0);
  EXPECT_EQ(std::memcmp(layer.v.row<uint8_t>(2 * 4), layer.k.row<uint8_t>(2 * 4), 512 * 2), 0);
  cache.zero_block(2);
  cache.read_block(2, out.data());
  EXPECT_EQ(out, std::vector<uint8_t>(out.size(), 0));
}

TEST(LatentAttentionScale, IsDeepSeeksMscaleSquaredOverTheHeadSize) {
  HParams hp = v2_lite();
  EXPECT_FLOAT_EQ(latent_attention_scale(hp), 1.0f / std::sqrt(192.0f));
  // DeepSeek-V2-Lite's YaRN: factor 40, mscale_all_dim 0.707 (written as 0.1 x 0.707). The
  // softmax scale is (0.1 m ln s + 1)^2 / sqrt(192), HF's yarn_get_mscale squared.
  hp.rope_scaling.type = "yarn";
  hp.rope_scaling.factor = 40.0;
  hp.rope_yarn_log_mul = 0.0707;
  const double mscale = 0.1 * 0.707 * std::log(40.0) + 1.0;
  EXPECT_NEAR(latent_attention_scale(hp), mscale * mscale / std::sqrt(192.0), 1e-6);
  // The file's attention factor multiplies mscale.
  hp.rope_scaling.attn_factor = 0.5;
  EXPECT_NEAR(latent_attention_scale(hp), 0.25 * mscale * mscale / std::sqrt(192.0), 1e-6);
}

}  // namespace
}  // namespace lumen::model
