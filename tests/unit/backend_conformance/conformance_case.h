#pragma once
// One row of the conformance table: an op of backend.h, the shapes it runs at and the storage
// type it is checked with. Every compiled backend runs every row (conformance_test.cc) and is
// compared with a plain scalar reference written in the checks (check_*.cc), never with another
// backend's kernels.
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tensor/dtype.h"

namespace lumen::backend::conformance {

enum class Op {
  kMatmul,
  kMatmulSameInput,
  kMatmulGlu,
  kGetRows,
  kRmsNorm,
  kAdd,
  kAddRow,
  kScale,
  kSwiglu,
  kGeglu,
  kRope,
  kStoreKv,
  kKvBlocks,  // copy_kv_block, read_kv_block, write_kv_block
  kAttention,
  kMoeFfn,   // moe_ffn: three experts over a batch, a shared one among them
  kSsmConv,  // ssm_conv: Mamba 2's causal depthwise convolution with its state
  kSsmScan,  // ssm_scan: Mamba 2's selective scan with its state
};
inline constexpr Op kAllOps[] = {Op::kMatmul,  Op::kMatmulSameInput, Op::kMatmulGlu, Op::kGetRows,   Op::kRmsNorm,
                                 Op::kAdd,     Op::kAddRow,          Op::kScale,     Op::kSwiglu,    Op::kGeglu,
                                 Op::kRope,    Op::kStoreKv,         Op::kKvBlocks,  Op::kAttention, Op::kMoeFfn,
                                 Op::kSsmConv, Op::kSsmScan};

// How a rope case configures the rotation.
enum class RopeMode { kNormal, kNeox, kPartial, kLinear, kYarn, kFreqFactors };
// How an attention case configures the heads' view of the cache.
// kLatent: multi-head latent attention (DeepSeek 2/3): one KV head whose rows are the values'
// latent followed by a rope part; the cache's V is a view of its K, values = the leading part.
// kSpan: rows of two of the slices attend both ways within a span (SequenceSlice::key_ends, a
// Gemma 3 image's); kAlibiSpan: ALiBi over such spans (a key past its query is penalised too).
// kSinks, kWindowSinks: a sink logit per head (AttentionConfig::sinks, gpt-oss) far below, among,
// above and far above the scores, causal and under a sliding window.
enum class AttentionMode { kCausal, kWindow, kSoftcap, kAlibi, kLatent, kSpan, kAlibiSpan, kSinks, kWindowSinks };
// A latent row's rope part: its values are the head_dim - kLatentRopeDims before it.
inline constexpr int64_t kLatentRopeDims = 64;
// Which activation a matmul_glu case fuses.
enum class GluMode { kSwiglu, kGeglu };

struct Case {
  Op op;
  // The op's one non-f32 operand: weights (matmul*), the table (get_rows), the K/V cache
  // (store_kv, kv blocks, attention); F32 for ops on activations only.
  tensor::DType type = tensor::DType::F32;
  // What the three numbers mean depends on the op:
  //   matmul*     {in features, out features, tokens}
  //   get_rows    {row length, table rows, ids}
  //   pointwise   {row length, rows, -}
  //   rope        {head_dim, heads, tokens}
  //   kv ops      {kv_dim, block_size, blocks}
  //   attention   {head_dim, heads, kv heads} (latent: {latent + rope part, heads, 1}, values
  //               the first head_dim - kLatentRopeDims)
  //   moe_ffn     {in features, expert ff, tokens} (mode 1: gpt-oss's biased experts)
  //   ssm_conv    {channels, kernel, tokens}
  //   ssm_scan    {state size, heads, tokens} (heads of 16; mode: the B/C groups)
  std::array<int64_t, 3> shape = {0, 0, 0};
  int mode = 0;  // RopeMode / AttentionMode / GluMode for those ops, groups for ssm_scan, else 0
};

std::string_view op_name(Op op);
// "matmul_Q4_K_256x16x1", "rope_F32_64x4x3_yarn": unique in the table, usable as a test name.
std::string case_name(const Case& c);

// The table.
const std::vector<Case>& all_cases();

}  // namespace lumen::backend::conformance
