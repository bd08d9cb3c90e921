// The tensor-core prefill attention (tensor_core_prefill_math.h, tensor_core_prefill.cu) on a
// CPU: its task plan, the mma register layout it relies on, and the kernel's steps run for 32
// emulated lanes per warp (tensor_core_emulation.h), against the CPU backend's attention. A GPU
// run checks the kernel itself (CudaTensorCorePrefill in tests/unit/backend_cuda).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <numeric>
#include <ostream>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/mma_fragments.h"
#include "backend/cuda/tensor_core_prefill_math.h"
#include "backend/cuda/tensor_core_prefill_plan.h"
#include "tensor/fp16.h"
#include "tensor_core_emulation.h"
#include "tensor_core_prefill_setup.h"

namespace lumen::backend::cuda {
namespace {

using emulation::emulate_kernel;
using emulation::EmulatedCall;
using emulation::max_relative_difference;
using tensor::DType;

// ---- the register layout ----

TEST(MmaFragments, EachLanesValuesCoverEveryCellOfTheirMatrixOnce) {
  std::set<std::pair<int, int>> a, b, c;
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const mma::Coord x = mma::a_coord(lane, i);
      ASSERT_TRUE(x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 16);
      EXPECT_TRUE(a.insert({x.row, x.col}).second) << "lane " << lane << " a" << i;
      if (i % 2 == 1) {  // a register's two values: one row, adjacent columns (k)
        const mma::Coord low = mma::a_coord(lane, i - 1);
        EXPECT_EQ(low.row, x.row);
        EXPECT_EQ(low.col + 1, x.col);
        EXPECT_EQ(low.col % 2, 0);  // an aligned 32-bit load
      }
    }
    for (int i = 0; i < 4; ++i) {
      const mma::Coord x = mma::b_coord(lane, i);
      ASSERT_TRUE(x.row >= 0 && x.row < 16 && x.col >= 0 && x.col < 8);
      EXPECT_TRUE(b.insert({x.row, x.col}).second) << "lane " << lane << " b" << i;
      if (i % 2 == 1) {
        const mma::Coord low = mma::b_coord(lane, i - 1);
        EXPECT_EQ(low.col, x.col);
        EXPECT_EQ(low.row + 1, x.row);
        EXPECT_EQ(low.row % 2, 0);
      }
      const mma::Coord y = mma::c_coord(lane, i);
      ASSERT_TRUE(y.row >= 0 && y.row < 16 && y.col >= 0 && y.col < 8);
      EXPECT_TRUE(c.insert({y.row, y.col}).second) << "lane " << lane << " c" << i;
    }
  }
  EXPECT_EQ(a.size(), 256u);
  EXPECT_EQ(b.size(), 128u);
  EXPECT_EQ(c.size(), 128u);
}

// The probabilities' A registers are the scores' C registers: A value i of keys 16 kk .. 16 kk +
// 15 sits where the lane holds the score of the same row and key (tile 2 kk + (i >= 4)).
TEST(MmaFragments, ScoreRegistersAreTheProbabilityFragmentsOfTheProductWithValues) {
  for (int lane = 0; lane < 32; ++lane) {
    for (int i = 0; i < 8; ++i) {
      const mma::Coord a = mma::a_coord(lane, i);
      const int tile = i >> 2;  // prefill_probabilities: registers 0-1 from tile 2kk, 2-3 from 2kk+1
      const mma::Coord c = mma::c_coord(lane, i & 3);
      EXPECT_EQ(c.row, a.row) << "lane " << lane << " value " << i;
      EXPECT_EQ(tile * 8 + c.col, a.col) << "lane " << lane << " value " << i;
    }
  }
}

using tc_prefill::Case;
using tc_prefill::PrefillSetup;

// The lane emulation of the kernel over `seqs` (a subset of the setup's slices); writes their rows
// of `out`.
template <int D>
void emulate(const PrefillSetup& s, std::span<const SequenceSlice> seqs, std::vector<float>& out) {
  const Case& c = s.c;
  EmulatedCall call;
  call.plan = plan_tensor_core_prefill(seqs, s.config, s.cache.block_size);
  call.q = s.q.data();
  call.q_head_stride = D;
  call.q_token_stride = c.n_heads * D;
  call.out = out.data();
  call.out_head_stride = D;
  call.out_token_stride = c.n_heads * D;
  call.dims = D;
  call.n_heads = c.n_heads;
  call.group = c.n_heads / c.n_kv_heads;
  call.window = c.window;
  call.score = {s.config.scale, s.config.softcap, s.config.softcap != 0.0f ? s.config.scale / s.config.softcap : 0.0f};
  call.k = s.cache.k.data();
  call.v = s.cache.v.data();
  call.row_values = s.cache.row_bytes / 2;
  call.block_size = s.cache.block_size;
  call.sinks = s.config.sinks;
  emulate_kernel<D>(call);
}

std::vector<float> emulate_all(const PrefillSetup& s, std::span<const SequenceSlice> seqs) {
  std::vector<float> out(s.q.size(), NAN);
  switch (s.c.head_dim) {
    case 64: emulate<64>(s, seqs, out); break;
    case 80: emulate<80>(s, seqs, out); break;
    case 128: emulate<128>(s, seqs, out); break;
    case 256: emulate<256>(s, seqs, out); break;
    default: ADD_FAILURE() << "no tile for head dim " << s.c.head_dim;
  }
  return out;
}

class TensorCorePrefillEmulated : public ::testing::TestWithParam<Case> {};

// Every row against the CPU backend (its llama.cpp arithmetic: whole-row softmax, probabilities
// rounded to f16 after normalising; here before): within 1e-3 of the largest output (measured
// 2.9e-4 to 4.0e-4 over these cases on 2026-11-29).
TEST_P(TensorCorePrefillEmulated, MatchesTheCpuBackendsAttention) {
  PrefillSetup s(GetParam());
  const std::vector<float> expected = s.cpu_attention();
  const std::vector<float> got = emulate_all(s, s.slices);
  EXPECT_LE(max_relative_difference(expected, got), 1e-3);
}

// With attention sinks (far below, among, above and far above the scores, head by head), each
// row closed with its head's sink against the CPU backend's exact path with them, to the same
// 1e-3; and without the sinks the rows are far off (the check can fail).
TEST_P(TensorCorePrefillEmulated, SinksJoinEachRowsSoftmaxAsOnTheCpu) {
  PrefillSetup s(GetParam());
  std::vector<float> sinks;
  for (int64_t h = 0; h < s.c.n_heads; ++h) {  // the levels' order changes every 4 heads (a GQA group)
    sinks.push_back(std::array{-30.0f, 0.5f, 3.0f, 25.0f}[(h + h / 4) % 4] + 0.125f * static_cast<float>(h));
  }
  s.config.sinks = sinks.data();
  const std::vector<float> expected = s.cpu_attention();
  EXPECT_LE(max_relative_difference(expected, emulate_all(s, s.slices)), 1e-3);
  s.config.sinks = nullptr;
  EXPECT_GT(max_relative_difference(expected, emulate_all(s, s.slices)), 1e-2);
}

// A prefill cut into two chunks (the second starting where the first ended) gives the same rows
// bit for bit, and so does each sequence alone: a row's result depends on its own scores only.
TEST_P(TensorCorePrefillEmulated, ARowsResultDoesNotDependOnItsChunkOrBatch) {
  PrefillSetup s(GetParam());
  const std::vector<float> whole = emulate_all(s, s.slices);
  std::vector<float> parts(whole.size(), NAN);
  for (const SequenceSlice& seq : s.slices) {
    const int64_t cut = std::max<int64_t>(kPrefillMinRows, seq.n_tokens / 2 + 3);
    std::vector<SequenceSlice> pieces;
    if (seq.n_tokens - cut >= kPrefillMinRows) {
      pieces = {{seq.first_token, cut, seq.start_pos, seq.block_table},
                {seq.first_token + cut, seq.n_tokens - cut, seq.start_pos + cut, seq.block_table}};
    } else {
      pieces = {seq};
    }
    for (const SequenceSlice& piece : pieces) {
      const std::vector<float> alone = emulate_all(s, std::span<const SequenceSlice>(&piece, 1));
      const auto row = static_cast<size_t>(s.c.n_heads * s.c.head_dim);
      std::copy(
          alone.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(piece.first_token) * row),
          alone.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(piece.first_token + piece.n_tokens) * row),
          parts.begin() + static_cast<std::ptrdiff_t>(static_cast<size_t>(piece.first_token) * row));
    }
  }
  ASSERT_EQ(whole.size(), parts.size());
  EXPECT_EQ(0, std::memcmp(whole.data(), parts.data(), whole.size() * sizeof(float)));
}

INSTANTIATE_TEST_SUITE_P(Shapes, TensorCorePrefillEmulated, ::testing::ValuesIn(tc_prefill::prefill_cases()),
                         [](const ::testing::TestParamInfo<Case>& case_info) {
                           return "case" + std::to_string(case_info.index);
                         });

// ---- the plan and what it takes ----

TEST(TensorCorePrefillPlan, TasksCoverEachVectorOfEachKvHeadOnceLongestFirst) {
  const std::vector<int32_t> table_a = {3, 1, 4, 1, 5, 9, 2, 6}, table_b = {7, 8, 0};
  for (int64_t head_dim : {64, 128, 256}) {
    for (const auto& [n_heads, n_kv_heads] : {std::pair<int64_t, int64_t>{8, 8}, {12, 4}, {14, 2}, {32, 1}}) {
      AttentionConfig config;
      config.n_heads = n_heads;
      config.n_kv_heads = n_kv_heads;
      config.head_dim = head_dim;
      const std::vector<SequenceSlice> seqs = {{0, 100, 20, table_a}, {100, 17, 16, table_b}};
      const PrefillPlan plan = plan_tensor_core_prefill(seqs, config, 16);
      ASSERT_EQ(plan.seqs.size(), 2u);
      EXPECT_EQ(plan.seqs[1].table_offset, 8);  // (20 + 100) / 16 rounded up
      EXPECT_EQ(plan.block_tables.size(), 8u + 3u);
      const int64_t group = n_heads / n_kv_heads, per_task = prefill_tile(head_dim).vectors();
      std::set<std::tuple<int, int, int64_t>> covered;
      int64_t previous_last = INT64_MAX;
      for (const PrefillTask& t : plan.tasks) {
        const AttentionSeq& seq = plan.seqs[static_cast<size_t>(t.seq)];
        EXPECT_EQ(t.vector_begin % per_task, 0);
        const int64_t end = std::min<int64_t>(seq.n_tokens * group, t.vector_begin + per_task);
        const int64_t last_key = seq.start_pos + (end - 1) / group;
        EXPECT_LE(last_key, previous_last);
        previous_last = last_key;
        for (int64_t v = t.vector_begin; v < end; ++v) EXPECT_TRUE(covered.insert({t.seq, t.kv_head, v}).second);
      }
      EXPECT_EQ(static_cast<int64_t>(covered.size()), (100 + 17) * group * n_kv_heads);
    }
  }
}

TEST(TensorCorePrefillPlan, TakesLongCausalSlicesOfF16CachesWithATileShape) {
  alignas(16) static uint16_t storage[4096];
  KvLayer cache;
  cache.k = TensorView{DType::F16, {128, 16, 1, 1}, 256, storage};
  cache.v = TensorView{DType::F16, {128, 16, 1, 1}, 256, storage + 2048};
  AttentionConfig config;
  config.n_heads = 4;
  config.n_kv_heads = 1;
  config.head_dim = 128;
  EXPECT_EQ(tensor_core_prefill_refusal(cache, config), "");
  KvLayer f32 = cache;
  f32.k.type = f32.v.type = DType::F32;
  EXPECT_EQ(tensor_core_prefill_refusal(f32, config), "the cache is not f16");
  AttentionConfig d96 = config;
  d96.head_dim = 96;
  EXPECT_EQ(tensor_core_prefill_refusal(cache, d96), "no tile shape for this head dim (64, 80, 128 or 256)");
  AttentionConfig alibi = config;
  alibi.alibi_max_bias = 8.0f;
  EXPECT_EQ(tensor_core_prefill_refusal(cache, alibi), "ALiBi");
  KvLayer latent = cache;
  latent.v.data = latent.k.data;
  EXPECT_EQ(tensor_core_prefill_refusal(latent, config), "values narrower than keys");
  KvLayer odd = cache;
  odd.k.row_bytes = 264;  // 8-byte multiple only
  EXPECT_EQ(tensor_core_prefill_refusal(odd, config), "cache rows not 16-byte aligned");

  const std::vector<int32_t> table = {0, 1};
  EXPECT_TRUE(tensor_core_prefill_takes({0, 16, 0, table}));
  EXPECT_FALSE(tensor_core_prefill_takes({0, 15, 0, table}));  // a verification step's rows
  const std::vector<uint8_t> visible(16 * 16, 1);
  SequenceSlice tree{0, 16, 0, table};
  tree.visible = visible;
  EXPECT_FALSE(tensor_core_prefill_takes(tree));
  const std::vector<int32_t> ends(16, 16);
  SequenceSlice span{0, 16, 0, table};
  span.key_ends = ends;
  EXPECT_FALSE(tensor_core_prefill_takes(span));
}

}  // namespace
}  // namespace lumen::backend::cuda
