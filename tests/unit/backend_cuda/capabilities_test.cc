// What the CUDA backend declares it runs (Backend::supports and its siblings), which the model
// and the engine check at load: every weight type the CPU reads (the GEMV and get_rows kernels
// cover them), moe_ffn (composed from its own ops), f32, f16, bf16 and FP8 KV caches (rotated
// too), heads up to the attention kernels' width; everything else refused at load. And the composed moe_ffn on the
// device against the CPU's native one on a MoE preset's shapes (qwen3moe-mini's layer: 512
// wide, experts of 192, 8 of 16 experts per token), Q4_1 as in the MoE goldens.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "backend/cuda/attention_kernels.h"
#include "cuda_test_util.h"
#include "kernel_test_util.h"
#include "tensor/dtype.h"
#include "tensor/quantize.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

TEST(CudaCapabilities, DeclaresWhatItsKernelsRun) {
  LUMEN_REQUIRE_CUDA();
  const Backend& b = *gpu();
  for (uint32_t raw = 0; raw < 64; ++raw) {
    const tensor::DTypeInfo* info = tensor::dtype_info(raw);
    if (info == nullptr || !tensor::has_reference_kernels(info->type) || info->type == DType::Q8_K ||
        info->type == DType::Q8_1) {
      continue;  // Q8_K and Q8_1 are activation formats, never a weight's
    }
    EXPECT_TRUE(b.supports_weight_type(info->type)) << info->name;
  }
  EXPECT_TRUE(b.supports(BackendFeature::MoeFfn));
  EXPECT_TRUE(b.supports(BackendFeature::ShiftKeys));
  EXPECT_TRUE(b.supports(BackendFeature::RotatedKv));
  // Written without a GPU: declared only where the switch a checking run sets says so.
  const CudaBackendOptions declared = options_with_environment({});
  EXPECT_EQ(b.supports(BackendFeature::LatentAttention), declared.latent_attention);
  EXPECT_EQ(b.supports(BackendFeature::StateSpace), declared.state_space);
  EXPECT_EQ(b.supports(BackendFeature::TreeAttention), declared.tree_attention);
  EXPECT_EQ(b.supports(BackendFeature::KvEviction), declared.kv_eviction);
  EXPECT_EQ(b.supports(BackendFeature::LayerNorm), declared.layer_norm);
  EXPECT_EQ(b.supports(BackendFeature::Encoder), declared.encoder);
  EXPECT_EQ(b.supports(BackendFeature::Alibi), declared.alibi);
  EXPECT_EQ(b.supports(BackendFeature::SpanAttention), declared.span_attention);
  EXPECT_EQ(b.supports(BackendFeature::AttentionSinks), declared.attention_sinks);
  EXPECT_EQ(b.supports(BackendFeature::Rwkv7), declared.rwkv7);
  EXPECT_EQ(b.supports(BackendFeature::BiasedExperts), declared.biased_experts);
  EXPECT_EQ(b.has_op(OpKind::RouteExperts), declared.routed_moe);
  EXPECT_EQ(b.has_op(OpKind::MoeFfnRouted), declared.routed_moe);
  for (DType t : {DType::F16, DType::F32, DType::BF16, DType::FP8_E4M3}) {
    EXPECT_TRUE(b.supports_kv_type(t)) << tensor::dtype_name(t);
  }
  EXPECT_EQ(b.supports_kv_type(DType::Q8_0), declared.quantized_kv_cache);
  EXPECT_EQ(b.supports_kv_type(DType::Q4_0), declared.quantized_kv_cache);
  EXPECT_EQ(b.max_attention_head_dim(), cuda::kMaxHeadDim);
  EXPECT_EQ(b.max_latent_attention_head_dim(), cuda::kMaxLatentHeadDim);
}

TEST(CudaCapabilities, ComposedMoeFfnMatchesTheCpuOnAPresetsShapes) {
  LUMEN_REQUIRE_CUDA();
  constexpr int64_t kIn = 512, kFf = 192, kExperts = 16, kUsed = 8, kTokens = 12;
  const auto quantize = [](const std::vector<float>& values, int64_t cols) {
    const size_t row_bytes = *tensor::row_bytes(DType::Q4_1, cols);
    const size_t rows = values.size() / static_cast<size_t>(cols);
    std::vector<uint8_t> bytes(rows * row_bytes);
    for (size_t r = 0; r < rows; ++r) {
      tensor::quantize_row(DType::Q4_1, values.data() + r * static_cast<size_t>(cols), bytes.data() + r * row_bytes,
                           cols);
    }
    return bytes;
  };
  const std::vector<uint8_t> gate = quantize(random_values(kIn * kFf * kExperts, 1, -0.1f, 0.1f), kIn);
  const std::vector<uint8_t> up = quantize(random_values(kIn * kFf * kExperts, 2, -0.1f, 0.1f), kIn);
  const std::vector<uint8_t> down = quantize(random_values(kFf * kIn * kExperts, 3, -0.1f, 0.1f), kFf);
  const std::vector<float> x = random_values(kIn * kTokens, 4);
  std::vector<float> results[2];
  // Each token to kUsed distinct experts with softmax-like weights, the same on both backends.
  std::mt19937 rng(5);
  std::vector<std::vector<int32_t>> rows(kExperts), slots(kExperts);
  std::vector<std::vector<float>> weights(kExperts);
  for (int32_t t = 0; t < kTokens; ++t) {
    std::vector<int32_t> order(kExperts);
    for (int32_t e = 0; e < kExperts; ++e) order[static_cast<size_t>(e)] = e;
    std::shuffle(order.begin(), order.end(), rng);
    for (int32_t s = 0; s < kUsed; ++s) {
      const auto e = static_cast<size_t>(order[static_cast<size_t>(s)]);
      rows[e].push_back(t);
      slots[e].push_back(s);
      weights[e].push_back(std::uniform_real_distribution<float>(0.01f, 0.3f)(rng));
    }
  }
  for (int i = 0; i < 2; ++i) {
    Backend& b = i == 0 ? static_cast<Backend&>(cpu()) : *gpu();
    const TensorView g = b.upload_weights(DType::Q4_1, {kIn, kFf, kExperts, 1}, gate.data());
    const TensorView u = b.upload_weights(DType::Q4_1, {kIn, kFf, kExperts, 1}, up.data());
    const TensorView d = b.upload_weights(DType::Q4_1, {kFf, kIn, kExperts, 1}, down.data());
    const TensorView xv = b.upload_weights(DType::F32, {kIn, kTokens, 1, 1}, x.data());  // x in its memory
    std::unique_ptr<Buffer> ob = b.allocate(x.size() * sizeof(float));
    TensorView ov = f32_matrix(static_cast<float*>(ob->data()), kIn, kTokens);
    std::vector<TensorView> mats;
    for (int64_t e = 0; e < kExperts; ++e) {
      mats.push_back(expert_matrix(g, e));
      mats.push_back(expert_matrix(u, e));
      mats.push_back(expert_matrix(d, e));
    }
    std::vector<ExpertWork> work;
    for (size_t e = 0; e < static_cast<size_t>(kExperts); ++e) {
      if (rows[e].empty()) continue;
      work.push_back({&mats[3 * e], &mats[3 * e + 1], &mats[3 * e + 2], rows[e], slots[e], weights[e]});
    }
    b.moe_ffn(xv, work, kUsed, Glu::Swiglu, ov);
    results[i].resize(x.size());
    b.copy_to_host(ov, results[i].data());
  }
  double worst = 0.0, scale = 0.0;
  for (size_t i = 0; i < x.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::abs(results[0][i] - results[1][i])));
    scale = std::max(scale, static_cast<double>(std::abs(results[0][i])));
  }
  // The two backends' matmuls quantize the same activations to 8 bits; sums in another order
  // may move a value across a rounding boundary: a few parts in a thousand of the output's range.
  EXPECT_LE(worst, 5e-3 * scale) << "largest |cpu| " << scale;
}

// Context shift composed of get_rows, rope and store_kv on the device against the CPU's kernel,
// on an f16 cache (the CUDA cache type) with YaRN (its magnitude must not be applied again):
// the keys of the shifted blocks to one f16 rounding, the values and other blocks unchanged.
TEST(CudaCapabilities, ComposedShiftKeysMatchesTheCpuKernel) {
  LUMEN_REQUIRE_CUDA();
  constexpr int64_t kHeadDim = 128, kRow = 2 * kHeadDim, kBlock = 16, kBlocks = 4, kRows = kBlock * kBlocks;
  const size_t row_bytes = kRow * sizeof(uint16_t), block_bytes = row_bytes * kBlock;
  RopeConfig rope;
  rope.rope_dims = kHeadDim;
  rope.freq_base = 1000000.0;
  rope.scaling = RopeScalingType::Yarn;
  rope.scaling_factor = 4.0;
  rope.original_context = 4096;
  const std::vector<float> k = random_values(kRow * kRows, 7), v = random_values(kRow * kRows, 8);
  const std::vector<int32_t> all = {0, 1, 2, 3}, shifted = {2, 0};
  std::vector<uint8_t> caches[2];
  for (int i = 0; i < 2; ++i) {
    Backend& b = i == 0 ? static_cast<Backend&>(cpu()) : *gpu();
    std::unique_ptr<Buffer> kb = b.allocate(block_bytes * kBlocks), vb = b.allocate(block_bytes * kBlocks);
    KvLayer layer{TensorView{DType::F16, {kRow, kBlock, kBlocks, 1}, row_bytes, kb->data()},
                  TensorView{DType::F16, {kRow, kBlock, kBlocks, 1}, row_bytes, vb->data()}, kBlock};
    const TensorView kd = b.upload_weights(DType::F32, {kRow, kRows, 1, 1}, k.data());
    const TensorView vd = b.upload_weights(DType::F32, {kRow, kRows, 1, 1}, v.data());
    const std::vector<SequenceSlice> seqs = {{0, kRows, 0, all}};
    b.store_kv(kd, vd, seqs, layer);
    b.shift_keys(layer, shifted, -21, rope, kHeadDim);
    caches[i].resize(2 * block_bytes * kBlocks);
    for (int64_t block = 0; block < kBlocks; ++block) {
      b.read_kv_block(layer, block, caches[i].data() + block * block_bytes,
                      caches[i].data() + (kBlocks + block) * block_bytes);
    }
  }
  int64_t off_by_one = 0;
  for (size_t i = 0; i < caches[0].size() / 2; ++i) {
    uint16_t a, g;
    std::memcpy(&a, caches[0].data() + 2 * i, 2);
    std::memcpy(&g, caches[1].data() + 2 * i, 2);
    const bool in_keys = i < static_cast<size_t>(kRow * kRows);
    const bool moved = in_keys && (i / (kRow * kBlock) == 2 || i / (kRow * kBlock) == 0);
    if (!moved) {
      ASSERT_EQ(a, g) << "value " << i << " moved";
    } else {
      ASSERT_LE(std::abs(static_cast<int>(a) - static_cast<int>(g)), 1) << "key value " << i;
      off_by_one += a != g;
    }
  }
  RecordProperty("keys_one_f16_ulp_apart", std::to_string(off_by_one));
}

// The composed context shift on the compressed cache types CUDA declares, rotated as the model
// stores them
// (kv_codec.h's store and widening, rotate_heads, get_rows of cache rows): against the CPU's
// kernel, the values and the unshifted blocks byte for byte, the shifted keys within two
// quantization steps (the two sides' rope differs by an ulp or so, which may move a code).
TEST(CudaCapabilities, ComposedShiftKeysOnRotatedCompressedCaches) {
  LUMEN_REQUIRE_CUDA();
  constexpr int64_t kHeadDim = 64, kRow = 2 * kHeadDim, kBlock = 16, kBlocks = 4, kRows = kBlock * kBlocks;
  RopeConfig rope;
  rope.rope_dims = kHeadDim;
  rope.freq_base = 10000.0;
  const std::vector<float> k = random_values(kRow * kRows, 17), v = random_values(kRow * kRows, 18);
  const std::vector<int32_t> all = {0, 1, 2, 3}, shifted = {1, 3};
  // Two quantization steps of a value of magnitude about 1..3, per type.
  const std::pair<DType, double> types[] = {{DType::BF16, 0.05}, {DType::FP8_E4M3, 0.5}};
  for (const auto& [type, tolerance] : types) {
    const size_t row_bytes = *tensor::row_bytes(type, kRow), block_bytes = row_bytes * kBlock;
    std::vector<uint8_t> caches[2];
    for (int i = 0; i < 2; ++i) {
      Backend& b = i == 0 ? static_cast<Backend&>(cpu()) : *gpu();
      std::unique_ptr<Buffer> kb = b.allocate(block_bytes * kBlocks), vb = b.allocate(block_bytes * kBlocks);
      KvLayer layer{TensorView{type, {kRow, kBlock, kBlocks, 1}, row_bytes, kb->data()},
                    TensorView{type, {kRow, kBlock, kBlocks, 1}, row_bytes, vb->data()}, kBlock, true};
      // Copies: the CPU backend's upload_weights may view the host array itself, which
      // rotate_heads would then rotate for the next backend too.
      std::vector<float> k_rows = k, v_rows = v;
      TensorView kd = b.upload_weights(DType::F32, {kRow, kRows, 1, 1}, k_rows.data());
      TensorView vd = b.upload_weights(DType::F32, {kRow, kRows, 1, 1}, v_rows.data());
      b.rotate_heads(kd, kHeadDim);  // as the model stores a rotated cache's rows
      b.rotate_heads(vd, kHeadDim);
      const std::vector<SequenceSlice> seqs = {{0, kRows, 0, all}};
      b.store_kv(kd, vd, seqs, layer);
      b.shift_keys(layer, shifted, 13, rope, kHeadDim);
      caches[i].resize(2 * block_bytes * kBlocks);
      for (int64_t block = 0; block < kBlocks; ++block) {
        b.read_kv_block(layer, block, caches[i].data() + block * block_bytes,
                        caches[i].data() + (kBlocks + block) * block_bytes);
      }
    }
    double worst = 0.0;
    for (int64_t block = 0; block < 2 * kBlocks; ++block) {
      const bool moved = block == 1 || block == 3;  // key blocks 1 and 3
      const uint8_t* a = caches[0].data() + block * block_bytes;
      const uint8_t* g = caches[1].data() + block * block_bytes;
      if (!moved) {
        ASSERT_EQ(std::memcmp(a, g, block_bytes), 0) << tensor::dtype_name(type) << ": block " << block << " changed";
        continue;
      }
      std::vector<float> wa(static_cast<size_t>(kRow * kBlock)), wg(wa.size());
      tensor::dequantize_row(type, a, wa.data(), kRow * kBlock);
      tensor::dequantize_row(type, g, wg.data(), kRow * kBlock);
      for (size_t e = 0; e < wa.size(); ++e) worst = std::max(worst, static_cast<double>(std::fabs(wa[e] - wg[e])));
    }
    EXPECT_LE(worst, tolerance) << tensor::dtype_name(type) << ": shifted keys, CUDA vs CPU";
    RecordProperty(std::string("worst_key_difference_") + std::string(tensor::dtype_name(type)), std::to_string(worst));
  }
}

// store_kv's q8_0 and q4_0 rows against the CPU's bytes, byte by byte, naming the first
// differences by row, block and byte within the block (0-1: the f16 scale). On an H200
// (2026-11-28) these rows differed (a scale's low byte read back 0; the codes equal) although
// kv_codec.h's functions match the CPU on the host: this test is there to show where, and the
// backend does not declare the two types until it passes.
TEST(CudaKvCodec, Q8_0AndQ4_0StoresWriteTheCpusBytes) {
  LUMEN_REQUIRE_CUDA();
  constexpr int64_t kRow = 128, kBlock = 16;
  const std::vector<float> k = random_values(kRow * kBlock, 27, -3.0f, 3.0f), v = random_values(kRow * kBlock, 28);
  const std::vector<int32_t> table = {0};
  for (DType type : {DType::Q8_0, DType::Q4_0}) {
    const size_t row_bytes = *tensor::row_bytes(type, kRow), block_bytes = row_bytes * kBlock;
    const size_t quant_block = type == DType::Q8_0 ? 34 : 18;
    std::vector<uint8_t> caches[2];
    for (int i = 0; i < 2; ++i) {
      Backend& b = i == 0 ? static_cast<Backend&>(cpu()) : *gpu();
      std::unique_ptr<Buffer> kb = b.allocate(block_bytes), vb = b.allocate(block_bytes);
      KvLayer layer{TensorView{type, {kRow, kBlock, 1, 1}, row_bytes, kb->data()},
                    TensorView{type, {kRow, kBlock, 1, 1}, row_bytes, vb->data()}, kBlock};
      std::vector<float> k_rows = k, v_rows = v;
      const TensorView kd = b.upload_weights(DType::F32, {kRow, kBlock, 1, 1}, k_rows.data());
      const TensorView vd = b.upload_weights(DType::F32, {kRow, kBlock, 1, 1}, v_rows.data());
      const std::vector<SequenceSlice> seqs = {{0, kBlock, 0, table}};
      b.store_kv(kd, vd, seqs, layer);
      caches[i].resize(2 * block_bytes);
      b.read_kv_block(layer, 0, caches[i].data(), caches[i].data() + block_bytes);
    }
    int reported = 0, differing = 0;
    for (size_t i = 0; i < caches[0].size(); ++i) {
      if (caches[0][i] == caches[1][i]) continue;
      ++differing;
      if (++reported <= 8) {
        const size_t in_half = i % block_bytes;
        ADD_FAILURE() << tensor::dtype_name(type) << (i < block_bytes ? " K" : " V") << " row " << in_half / row_bytes
                      << " block " << (in_half % row_bytes) / quant_block << " byte "
                      << (in_half % row_bytes) % quant_block << ": CPU 0x" << std::hex << int{caches[0][i]}
                      << ", CUDA 0x" << int{caches[1][i]} << std::dec;
      }
    }
    EXPECT_EQ(differing, 0) << tensor::dtype_name(type) << ": bytes differing of " << caches[0].size();
  }
}

}  // namespace
}  // namespace lumen::backend::testing
