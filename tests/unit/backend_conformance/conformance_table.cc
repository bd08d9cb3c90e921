// The conformance table. Adding an op to backend.h means adding its rows here (and a check in
// check_*.cc); adding a weight type to a backend means adding it to the type lists below.
#include <initializer_list>

#include "conformance_case.h"

namespace lumen::backend::conformance {

namespace {

using tensor::DType;

// Every weight type the CPU backend multiplies (cpu::matmul_supports; a test keeps this list
// and that function in step).
constexpr DType kMatmulTypes[] = {DType::F32,  DType::F16,    DType::BF16,   DType::Q4_0, DType::Q4_1, DType::Q5_0,
                                  DType::Q5_1, DType::Q8_0,   DType::Q2_K,   DType::Q3_K, DType::Q4_K, DType::Q5_K,
                                  DType::Q6_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
// Every table type get_rows converts (tensor::has_reference_kernels).
constexpr DType kRowTypes[] = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,   DType::Q5_0,
                               DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,   DType::Q3_K,   DType::Q4_K,
                               DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
// The K/V cache types (backend::is_kv_cache_type): f16, f32 and --kv-cache-dtype's compressed
// ones, whose heads of 64 and 128 values are whole q8_0 / q4_0 blocks.
constexpr DType kCacheTypes[] = {DType::F16, DType::F32, DType::BF16, DType::Q8_0, DType::Q4_0, DType::FP8_E4M3};

std::vector<Case> build() {
  std::vector<Case> t;
  for (DType type : kMatmulTypes) {
    // One token (decode), a few (the CUDA GEMV's batch), more than 8 (CUDA's cuBLAS path, the
    // CPU's multi-token tiles); output counts off every tile size.
    for (auto shape : {std::array<int64_t, 3>{256, 16, 1}, {512, 33, 5}, {256, 40, 17}}) {
      t.push_back({Op::kMatmul, type, shape});
    }
    t.push_back({Op::kMatmulSameInput, type, {256, 24, 3}});
    for (GluMode glu : {GluMode::kSwiglu, GluMode::kGeglu}) {
      t.push_back({Op::kMatmulGlu, type, {256, 32, 4}, static_cast<int>(glu)});
    }
  }
  for (DType type : kRowTypes) t.push_back({Op::kGetRows, type, {512, 7, 5}});

  // Row lengths with SIMD tails and one long row.
  for (auto shape : {std::array<int64_t, 3>{17, 5, 0}, {1000, 3, 0}, {4096, 2, 0}}) {
    for (Op op : {Op::kRmsNorm, Op::kAdd, Op::kAddRow, Op::kScale, Op::kSwiglu, Op::kGeglu}) {
      t.push_back({op, DType::F32, shape});
    }
  }

  for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox, RopeMode::kPartial, RopeMode::kLinear, RopeMode::kYarn,
                        RopeMode::kFreqFactors}) {
    t.push_back({Op::kRope, DType::F32, {64, 4, 3}, static_cast<int>(mode)});
    t.push_back({Op::kRope, DType::F32, {128, 2, 5}, static_cast<int>(mode)});
  }

  for (DType type : kCacheTypes) {
    t.push_back({Op::kStoreKv, type, {64, 16, 4}});
    t.push_back({Op::kStoreKv, type, {256, 8, 6}});
    t.push_back({Op::kKvBlocks, type, {64, 16, 4}});
    for (AttentionMode mode : {AttentionMode::kCausal, AttentionMode::kWindow, AttentionMode::kSoftcap}) {
      t.push_back({Op::kAttention, type, {64, 4, 4}, static_cast<int>(mode)});   // MHA
      t.push_back({Op::kAttention, type, {128, 8, 2}, static_cast<int>(mode)});  // GQA
    }
    // ALiBi: 4 heads (one slope series) and 6 over 2 KV heads (both series).
    t.push_back({Op::kAttention, type, {64, 4, 4}, static_cast<int>(AttentionMode::kAlibi)});
    t.push_back({Op::kAttention, type, {64, 6, 2}, static_cast<int>(AttentionMode::kAlibi)});
    // Spans that attend both ways (Gemma 3's images), alone and under ALiBi.
    t.push_back({Op::kAttention, type, {64, 4, 4}, static_cast<int>(AttentionMode::kSpan)});
    t.push_back({Op::kAttention, type, {128, 8, 2}, static_cast<int>(AttentionMode::kSpan)});
    t.push_back({Op::kAttention, type, {64, 6, 2}, static_cast<int>(AttentionMode::kAlibiSpan)});
    // Attention sinks (gpt-oss): MHA, and GQA under a window.
    t.push_back({Op::kAttention, type, {64, 4, 4}, static_cast<int>(AttentionMode::kSinks)});
    t.push_back({Op::kAttention, type, {64, 8, 2}, static_cast<int>(AttentionMode::kWindowSinks)});
  }
  // Latent attention (the cache's values a view of its keys): DeepSeek's rows of 512 + 64 with
  // V2-Lite's 16 heads, and a small row of 64 + 64 with 5 heads (items of 8 query vectors cut
  // mid-token), in the two cache types DeepSeek runs with.
  for (DType type : {DType::F16, DType::F32}) {
    t.push_back({Op::kAttention, type, {576, 16, 1}, static_cast<int>(AttentionMode::kLatent)});
    t.push_back({Op::kAttention, type, {128, 5, 1}, static_cast<int>(AttentionMode::kLatent)});
  }
  // A float type, the legacy and K-quant kernels (packed at the AVX-512 level); one decoded token
  // and a batch.
  for (DType type : {DType::F32, DType::Q4_0, DType::Q8_0, DType::Q4_K}) {
    t.push_back({Op::kMoeFfn, type, {256, 256, 9}});
  }
  t.push_back({Op::kMoeFfn, DType::Q4_1, {256, 64, 2}});
  // gpt-oss's experts (biases, the clamped SwiGLU) in its weight type and two others.
  for (DType type : {DType::MXFP4, DType::F32, DType::Q8_0}) t.push_back({Op::kMoeFfn, type, {256, 128, 9}, 1});
  // Mamba 2: channels off the task split (256) and the SIMD width, kernels of 4 (every Mamba)
  // and 2; states of 16 and 64 with a tail of lanes, one and two groups.
  t.push_back({Op::kSsmConv, DType::F32, {300, 4, 9}});
  t.push_back({Op::kSsmConv, DType::F32, {64, 2, 5}});
  // Past the CPU's 8192 outputs a call (rows x channels), below which it stays on one thread.
  t.push_back({Op::kSsmConv, DType::F32, {1100, 4, 24}});
  t.push_back({Op::kSsmScan, DType::F32, {16, 4, 9}, 1});
  t.push_back({Op::kSsmScan, DType::F32, {68, 6, 7}, 2});
  // Prompts long enough for the CPU's chunked form (several chunks, a partial last one).
  t.push_back({Op::kSsmScan, DType::F32, {128, 4, 300}, 2});
  return t;
}

}  // namespace

const std::vector<Case>& all_cases() {
  static const std::vector<Case> table = build();
  return table;
}

}  // namespace lumen::backend::conformance
