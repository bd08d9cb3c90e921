// The profiler's accounting, checked against numbers worked out by hand for one layer of
// SmolLM2-135M's shapes (embedding 576, 9 query heads and 3 KV heads of 64, FFN 1536).
#include "profile/op_cost.h"

#include <gtest/gtest.h>

#include "profile/roofline.h"

namespace lumen::profile {
namespace {

using backend::TensorView;
using tensor::DType;

TensorView f32(int64_t cols, int64_t rows) { return {DType::F32, {cols, rows, 1, 1}, static_cast<size_t>(cols) * 4, nullptr}; }

// A Q4_1 weight {in, out}: 32 values per 20-byte block.
TensorView q4_1(int64_t in, int64_t out) { return {DType::Q4_1, {in, out, 1, 1}, static_cast<size_t>(in / 32 * 20), nullptr}; }

TEST(OpCost, MatmulMovesTheWeightOnceAndTheActivations) {
  // ffn_down of one decode token: 1536 -> 576. Weight 576 rows of 48 blocks of 20 bytes.
  const OpCost one = matmul_cost(q4_1(1536, 576), f32(1536, 1), f32(576, 1));
  EXPECT_DOUBLE_EQ(one.bytes, 576.0 * 48 * 20 + 1536 * 4 + 576 * 4);  // 552960 + 6144 + 2304
  EXPECT_DOUBLE_EQ(one.flops, 2.0 * 1536 * 576);
  EXPECT_TRUE(one.int8);
  // 32 tokens: the weight is still read once; the FLOPs grow 32 times.
  const OpCost batch = matmul_cost(q4_1(1536, 576), f32(1536, 32), f32(576, 32));
  EXPECT_DOUBLE_EQ(batch.bytes, 552960.0 + 32 * (1536 + 576) * 4);
  EXPECT_DOUBLE_EQ(batch.flops, 32 * one.flops);
  EXPECT_FALSE(matmul_cost(f32(16, 16), f32(16, 1), f32(16, 1)).int8);
}

TEST(OpCost, QkvSharesItsInputAndGluAddsTheActivation) {
  const TensorView x = f32(576, 1);
  TensorView wq = q4_1(576, 576), wk = q4_1(576, 192), wv = q4_1(576, 192);
  TensorView q = f32(576, 1), k = f32(192, 1), v = f32(192, 1);
  const backend::Backend::MatmulOutput outputs[] = {{&wq, &q}, {&wk, &k}, {&wv, &v}};
  const OpCost qkv = matmul_same_input_cost(x, outputs);
  // Weights: (576 + 192 + 192) rows of 18 blocks of 20 bytes; x once; q, k, v written.
  EXPECT_DOUBLE_EQ(qkv.bytes, 960.0 * 18 * 20 + 576 * 4 + 960 * 4);
  EXPECT_DOUBLE_EQ(qkv.flops, 2.0 * 576 * 960);

  const TensorView gate = f32(1536, 1);
  const OpCost glu = matmul_glu_cost(q4_1(576, 1536), q4_1(576, 1536), x, backend::Backend::Glu::Swiglu, gate);
  // Two 1536-row weights of 18 blocks, x once, gate and up written; silu(g) * u: 5 per value.
  EXPECT_DOUBLE_EQ(glu.bytes, 2.0 * 1536 * 18 * 20 + 576 * 4 + 2 * 1536 * 4);
  EXPECT_DOUBLE_EQ(glu.flops, 2 * 2.0 * 576 * 1536 + 5.0 * 1536);
}

TEST(OpCost, AttentionReadsEachVisiblePositionOnce) {
  backend::AttentionConfig config{9, 3, 64, 0.125f, 0, 0.0f, 0};
  backend::KvLayer cache;
  cache.k = {DType::F16, {192, 16, 8, 1}, 192 * 2, reinterpret_cast<void*>(0x1000)};
  cache.v = {DType::F16, {192, 16, 8, 1}, 192 * 2, reinterpret_cast<void*>(0x9000)};
  const int32_t blocks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
  // One decode token at position 127: it sees 128 positions of 192 f16 keys and values.
  const backend::SequenceSlice decode[] = {{0, 1, 127, blocks}};
  const OpCost one = attention_cost(f32(576, 1), cache, decode, config);
  EXPECT_DOUBLE_EQ(one.bytes, 576 * 4 + 128.0 * (384 + 384) + 576 * 4);
  EXPECT_DOUBLE_EQ(one.flops, 128.0 * 9 * 2 * (64 + 64));  // QK^T and PV per head and position
  EXPECT_DOUBLE_EQ(one.context_bytes, 128.0 * (384 + 384));  // the K/V read, not q or out
  EXPECT_FALSE(one.int8);

  // A 4-token chunk at positions 100..103 under a 32-position window: the chunk reads
  // positions 69..103 (35), each token attends to 32 of them.
  config.sliding_window = 32;
  const backend::SequenceSlice chunk[] = {{0, 4, 100, blocks}};
  const OpCost windowed = attention_cost(f32(576, 4), cache, chunk, config);
  EXPECT_DOUBLE_EQ(windowed.bytes, 4 * 576 * 4 + 35.0 * 768 + 4 * 576 * 4);
  EXPECT_DOUBLE_EQ(windowed.flops, 4 * 32.0 * 9 * 2 * 128);

  // A q8_0 cache: 192 values are 6 blocks of 34 bytes per key row.
  cache.k = {DType::Q8_0, {192, 16, 8, 1}, 6 * 34, reinterpret_cast<void*>(0x1000)};
  cache.v = {DType::Q8_0, {192, 16, 8, 1}, 6 * 34, reinterpret_cast<void*>(0x9000)};
  config.sliding_window = 0;
  EXPECT_DOUBLE_EQ(attention_cost(f32(576, 1), cache, decode, config).bytes, 576 * 4 + 128.0 * 2 * 204 + 576 * 4);
  // Multi-head latent attention's values are a view of the keys: nothing more is read for them.
  cache.v.data = cache.k.data;
  EXPECT_DOUBLE_EQ(attention_cost(f32(576, 1), cache, decode, config).bytes, 576 * 4 + 128.0 * 204 + 576 * 4);
}

// Mamba2-130m's decode step, one layer: 1536 inner channels in 24 heads, state 128, one group,
// a 4-tap convolution over 1792 channels (x, B and C).
TEST(OpCost, MambaOpsCountTheirStateAsContext) {
  backend::SsmSequence seq{0, 1, f32(1792, 3), f32(128, 1536)};
  const backend::SsmSequence seqs[] = {seq};
  const OpCost conv = ssm_conv_cost(f32(1792, 1), f32(4, 1792), seqs);
  // x, out and the bias; the taps; the window of 3 rows read and written back.
  EXPECT_DOUBLE_EQ(conv.context_bytes, 2.0 * 3 * 1792 * 4);
  EXPECT_DOUBLE_EQ(conv.bytes, 3.0 * 1792 * 4 + 1792.0 * 4 * 4 + conv.context_bytes);
  EXPECT_DOUBLE_EQ(conv.flops, 1792.0 * (2 * 4 + 1 + 5));
  const OpCost scan = ssm_scan_cost(f32(1536, 1), f32(24, 1), f32(128, 1), f32(128, 1), seqs);
  // The 0.79 MB state read once and written once dwarfs x, y, dt, B, C and A, D, dt's bias.
  EXPECT_DOUBLE_EQ(scan.context_bytes, 2.0 * 1536 * 128 * 4);
  EXPECT_DOUBLE_EQ(scan.bytes, (2.0 * 1536 + 24 + 256) * 4 + 3 * 24 * 4 + scan.context_bytes);
  EXPECT_DOUBLE_EQ(scan.flops, 6.0 * 1536 * 128 + 3 * 1536 + 5 * 24);
  // Two sequences of one token each: twice the state, the same rows' worth per token.
  const backend::SsmSequence two[] = {seq, {1, 1, f32(1792, 3), f32(128, 1536)}};
  EXPECT_DOUBLE_EQ(ssm_scan_cost(f32(1536, 2), f32(24, 2), f32(128, 2), f32(128, 2), two).context_bytes,
                   2 * scan.context_bytes);
}

TEST(OpCost, SmallOpsOfOneLayer) {
  const TensorView x = f32(576, 4);
  const OpCost norm = rms_norm_cost(x, f32(576, 1));
  EXPECT_DOUBLE_EQ(norm.bytes, 2 * 2304.0 * 4 + 576 * 4);
  EXPECT_DOUBLE_EQ(norm.flops, 4 * 2304.0);
  EXPECT_DOUBLE_EQ(elementwise_cost(x, 2, 1.0).bytes, 3 * 2304.0 * 4);  // a residual add
  // rope on the 9 query heads of 4 tokens, all 64 dimensions rotating: 3 FLOPs per value.
  backend::RopeConfig rope;
  rope.rope_dims = 64;
  const TensorView q{DType::F32, {64, 9, 4, 1}, 64 * 4, nullptr};
  EXPECT_DOUBLE_EQ(rope_cost(q, rope).flops, 3.0 * 64 * 9 * 4);
  EXPECT_DOUBLE_EQ(rope_cost(q, rope).bytes, 2.0 * 64 * 9 * 4 * 4);
  // The Hadamard rotation of 64-wide heads: 6 butterfly stages and a scaling per value.
  EXPECT_DOUBLE_EQ(rotate_heads_cost(x, 64).flops, 7.0 * 2304);
  // store_kv of 4 tokens into an f16 cache: f32 in, f16 out, keys and values.
  backend::KvLayer cache;
  cache.k = {DType::F16, {192, 16, 8, 1}, 384, reinterpret_cast<void*>(0x1000)};
  cache.v = {DType::F16, {192, 16, 8, 1}, 384, reinterpret_cast<void*>(0x9000)};
  EXPECT_DOUBLE_EQ(store_kv_cost(f32(192, 4), f32(192, 4), cache).bytes, 2 * (4 * 192 * 4.0 + 4 * 384.0));
  // Looking up 4 rows of a Q4_1 embedding of 576: 18 blocks of 20 bytes each, f32 out.
  EXPECT_DOUBLE_EQ(get_rows_cost(q4_1(576, 49152), 4, x).bytes, 4 * 360.0 + 2304 * 4);
}

TEST(Roofline, TheLowerRoofBoundsAnOp) {
  MachineCeilings machine;
  machine.read_gbps = 20;
  machine.fp32_gflops = 100;
  machine.int8_gops = 400;
  // 1 GFLOP over 1 GB in 0.1 s: intensity 1, bandwidth roof 20 GFLOP/s, achieved 10.
  const RooflinePoint low = roofline_point({1e9, 1e9, false}, 0.1, machine);
  EXPECT_DOUBLE_EQ(low.intensity, 1.0);
  EXPECT_TRUE(low.memory_bound);
  EXPECT_DOUBLE_EQ(low.attainable, 20.0);
  EXPECT_DOUBLE_EQ(low.achieved, 10.0);
  EXPECT_DOUBLE_EQ(low.efficiency, 0.5);
  EXPECT_DOUBLE_EQ(low.gbps, 10.0);
  // Intensity 100: the f32 peak (100) bounds an f32 op, the int8 peak (400) an int8 one.
  EXPECT_DOUBLE_EQ(roofline_point({1e8, 1e10, false}, 1.0, machine).attainable, 100.0);
  const RooflinePoint int8 = roofline_point({1e8, 1e10, true}, 1.0, machine);
  EXPECT_FALSE(int8.memory_bound);
  EXPECT_DOUBLE_EQ(int8.attainable, 400.0);
  EXPECT_DOUBLE_EQ(int8.efficiency, 10.0 / 400.0);
  // A copy has no FLOPs: its efficiency is its share of the bandwidth.
  EXPECT_DOUBLE_EQ(roofline_point({2e9, 0, false}, 1.0, machine).efficiency, 0.1);
}

}  // namespace
}  // namespace lumen::profile
