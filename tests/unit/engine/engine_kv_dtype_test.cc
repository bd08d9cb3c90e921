// The engine with a compressed KV cache (EngineConfig::kv_cache_dtype) on the synthetic model:
// q8_0 keeps greedy tokens of the f16 cache, with its heads Hadamard-rotated or not; every type survives preemption by swap and by
// recompute and reuses prefix-cache blocks with the tokens it makes without them; the same
// byte budget holds more blocks; heads that are not whole blocks, or an unknown name, are
// refused.
#include "engine/kv_cache_dtype.h"
#include "synth_engine.h"

namespace lumen::testing {
namespace {

class EngineKvDtype : public SynthEngineTest {
 protected:
  // Room for `kv_blocks` blocks of `dtype` (block size 4).
  static EngineConfig config_for(KvCacheDtype dtype, int64_t kv_blocks) {
    EngineConfig c = config(1);
    c.kv_cache_dtype = dtype;
    c.kv_cache_bytes = kv_blocks * static_cast<int64_t>(model::KvCache::bytes_per_block(
                                       model_->hparams, c.block_size, engine::kv_tensor_type(dtype)));
    return c;
  }
  // Three requests side by side, each 12 greedy tokens.
  static std::vector<std::vector<int32_t>> run(Engine& engine) {
    std::vector<RequestHandle> hs;
    for (int s = 0; s < 3; ++s) hs.push_back(engine.add_request(prompt(6 + s, 40 + s), greedy(12)));
    drain(engine);
    std::vector<std::vector<int32_t>> out;
    for (RequestHandle& h : hs) out.push_back(tokens(h));
    return out;
  }
};

// Under the sanitizers the two block formats only: bf16 and fp8 move through the same byte
// copies and the same dequantize-per-tile path, and each type costs a second there.
const std::vector<KvCacheDtype> kCompressed =
    LUMEN_UNDER_SANITIZERS ? std::vector<KvCacheDtype>{KvCacheDtype::Q8_0, KvCacheDtype::Q4_0}
                           : std::vector<KvCacheDtype>{KvCacheDtype::Bf16, KvCacheDtype::Q8_0, KvCacheDtype::Q4_0,
                                                       KvCacheDtype::Fp8E4m3};

TEST_F(EngineKvDtype, Q8_0KeepsTheGreedyTokensOfF16) {
  Engine f16(handle(), config_for(KvCacheDtype::F16, 128));
  Engine q8(handle(), config_for(KvCacheDtype::Q8_0, 128));
  EXPECT_EQ(run(q8), run(f16));
}

// The quantized types store Hadamard-rotated heads by default (model::rotates_kv_cache); the
// greedy tokens above already depend on the rotation being undone. Turned off, q8_0 keeps them
// too; f16 and bf16 are never rotated.
TEST_F(EngineKvDtype, QuantizedCachesRotateTheirHeadsUnlessTurnedOff) {
  backend::Backend& backend = *backend_;
  const model::HParams& hp = model_->hparams;
  ASSERT_EQ(hp.head_dim & (hp.head_dim - 1), 0u) << "the synthetic model's heads are a power of two";
  for (const tensor::DType type : {tensor::DType::Q8_0, tensor::DType::Q4_0, tensor::DType::FP8_E4M3}) {
    EXPECT_TRUE(model::KvCache(backend, hp, 2, 4, type).rotated()) << tensor::dtype_name(type);
    EXPECT_FALSE(model::KvCache(backend, hp, 2, 4, type, false).rotated()) << tensor::dtype_name(type);
  }
  EXPECT_FALSE(model::KvCache(backend, hp, 2, 4, tensor::DType::F16).rotated());
  EXPECT_FALSE(model::KvCache(backend, hp, 2, 4, tensor::DType::BF16).rotated());

  Engine f16(handle(), config_for(KvCacheDtype::F16, 128));
  EngineConfig plain = config_for(KvCacheDtype::Q8_0, 128);
  plain.kv_cache_rotation = false;
  Engine q8(handle(), plain);
  EXPECT_EQ(run(q8), run(f16));
}

TEST_F(EngineKvDtype, PreemptionAndPrefixCacheKeepEachTypesTokens) {
  for (KvCacheDtype dtype : kCompressed) {
    SCOPED_TRACE(std::string(kv_cache_dtype_name(dtype)));
    Engine roomy(handle(), config_for(dtype, 128));
    const std::vector<std::vector<int32_t>> expected = run(roomy);
    for (PreemptionMode mode : {PreemptionMode::Swap, PreemptionMode::Recompute}) {
      EngineConfig c = config_for(dtype, 10);  // about two of the three at once
      c.preemption_mode = mode;
      c.enable_prefix_caching = false;
      Engine tight(handle(), c);
      EXPECT_EQ(run(tight), expected);
      EXPECT_GT(tight.stats().preemptions, 0u);
      if (mode == PreemptionMode::Swap) {
        EXPECT_GT(tight.stats().swapped_out_blocks, 0u);
      }
    }
    // The same prompt again: its full blocks come from the prefix cache, the tokens do not change.
    RequestHandle again = roomy.add_request(prompt(6, 40), greedy(12));
    const uint64_t hits = roomy.stats().prefix_hit_blocks;
    drain(roomy);
    EXPECT_EQ(tokens(again), expected[0]);
    EXPECT_GT(roomy.stats().prefix_hit_blocks, hits);
  }
}

TEST_F(EngineKvDtype, TheSameBudgetHoldsMoreBlocks) {
  const int64_t budget = 64 * static_cast<int64_t>(model::KvCache::bytes_per_block(model_->hparams, 4));
  auto blocks = [&](KvCacheDtype dtype) {
    EngineConfig c = config(1);
    c.kv_cache_dtype = dtype;
    c.kv_cache_bytes = budget;
    c.max_num_seqs = 1024;  // so the pool is sized by the budget, not by the sequences
    return Engine(handle(), c).stats().kv_blocks_total;
  };
  const int64_t f16 = blocks(KvCacheDtype::F16);
  EXPECT_EQ(blocks(KvCacheDtype::Bf16), f16);
  EXPECT_EQ(blocks(KvCacheDtype::Fp8E4m3), 2 * f16);
  EXPECT_EQ(blocks(KvCacheDtype::Q8_0), f16 * 64 / 34);  // 34 bytes per 32 values instead of 64
  EXPECT_EQ(blocks(KvCacheDtype::Q4_0), f16 * 64 / 18);
}

TEST(KvCacheDtypeNames, ParseAndName) {
  for (KvCacheDtype dtype : {KvCacheDtype::F16, KvCacheDtype::Bf16, KvCacheDtype::Q8_0, KvCacheDtype::Q4_0,
                             KvCacheDtype::Fp8E4m3}) {
    EXPECT_EQ(parse_kv_cache_dtype(kv_cache_dtype_name(dtype)), dtype);
  }
  EXPECT_EQ(parse_kv_cache_dtype("Q8_0"), KvCacheDtype::Q8_0);
  EXPECT_EQ(parse_kv_cache_dtype("fp8"), KvCacheDtype::Fp8E4m3);
  EXPECT_EQ(parse_kv_cache_dtype("auto"), KvCacheDtype::F16);
  EXPECT_FALSE(parse_kv_cache_dtype("q5_0").has_value());
  EXPECT_FALSE(parse_kv_cache_dtype("").has_value());
}

// The CPU backend holds every KV type (the default Backend::supports_kv_type, which CUDA keeps,
// only f16 and f32); a model whose heads are not whole blocks of the type is refused by name.
TEST(KvCacheDtypeBackends, HeadsMustBeWholeBlocks) {
  backend::CpuBackend cpu(1);
  for (tensor::DType type : {tensor::DType::F16, tensor::DType::BF16, tensor::DType::Q8_0, tensor::DType::Q4_0,
                             tensor::DType::FP8_E4M3}) {
    EXPECT_TRUE(cpu.supports_kv_type(type)) << tensor::dtype_name(type);
  }
  EXPECT_FALSE(cpu.supports_kv_type(tensor::DType::Q4_K));
  model::HParams hp;
  hp.block_count = 1;
  hp.head_count_kv = 2;
  hp.head_dim = 48;
  const model::KvCache f16(cpu, hp, 4, 16, tensor::DType::F16);
  EXPECT_EQ(f16.n_blocks(), 4);
  try {
    const model::KvCache q4(cpu, hp, 4, 16, tensor::DType::Q4_0);
    ADD_FAILURE() << "a q4_0 cache with 48-value heads was made";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("needs heads of a multiple of 32 values"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::testing
