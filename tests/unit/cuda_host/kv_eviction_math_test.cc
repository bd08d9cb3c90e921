// src/backend/cuda/kv_eviction_math.h on the host, driven the way kv_eviction.cu drives it,
// against the CPU backend's importance-based KV eviction (backend/cpu/kv_importance.cc):
//  - gather_kv_rows: every kept slice read into a buffer, then written to its place (compaction
//    in place, a destination block among the sources): the cache's bytes equal the CPU's;
//  - attention_scores: per row and query head the scores, their max, the sum of exponentials in
//    double and the probabilities, then summed per slot and KV head, rows then heads in order:
//    within the rounding of a probability (f16 on an f16 cache, where the CPU's are the
//    attention's own f16 probabilities) of the CPU's table, with a window and a softcap.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cuda/kv_eviction_math.h"
#include "tensor/fp16.h"
#include "unit/backend/kernel_test_util.h"

namespace lumen::backend::cuda {
namespace {

using tensor::DType;

constexpr int64_t kBlockSize = 16, kBlocks = 6, kKvHeads = 2, kHeadDim = 32;

using backend::testing::random_values;

// A cache of `type` (f16 or f32) filled from random values: its bytes and a view of them.
struct HostCache {
  std::vector<uint8_t> k, v;
  KvLayer layer;
};

HostCache random_cache(DType type, uint32_t seed) {
  const int64_t width = kKvHeads * kHeadDim, rows = kBlockSize * kBlocks;
  const size_t elem = type == DType::F16 ? 2 : 4;
  HostCache c;
  for (auto [bytes, s] : {std::pair{&c.k, seed}, std::pair{&c.v, seed + 1}}) {
    const std::vector<float> values = random_values(static_cast<size_t>(width * rows), s, -1.5f, 1.5f);
    bytes->resize(values.size() * elem);
    for (size_t i = 0; i < values.size(); ++i) {
      if (type == DType::F16) {
        const uint16_t h = tensor::float_to_fp16(values[i]);
        std::memcpy(bytes->data() + 2 * i, &h, 2);
      } else {
        std::memcpy(bytes->data() + 4 * i, &values[i], 4);
      }
    }
  }
  const size_t row_bytes = static_cast<size_t>(width) * elem;
  c.layer.k = TensorView{type, {width, kBlockSize, kBlocks, 1}, row_bytes, c.k.data()};
  c.layer.v = TensorView{type, {width, kBlockSize, kBlocks, 1}, row_bytes, c.v.data()};
  c.layer.block_size = kBlockSize;
  return c;
}

TEST(KvEvictionMath, GatherLikeTheKernelsEqualsTheCpusBytes) {
  for (const DType type : {DType::F16, DType::F32}) {
    HostCache ours = random_cache(type, 7), cpus = random_cache(type, 7);
    // A sequence of 48 slots in blocks 3, 1, 4 compacted into blocks 1, 0: block 1 is a source
    // and a destination. Each head keeps its own 20 slots, ascending.
    const std::vector<int32_t> src_table = {3, 1, 4}, dst_table = {1, 0};
    constexpr int64_t kKeep = 20;
    std::vector<int32_t> keep;
    std::mt19937 rng(11);
    for (int64_t h = 0; h < kKvHeads; ++h) {
      std::vector<int32_t> slots(48);
      for (int32_t i = 0; i < 48; ++i) slots[static_cast<size_t>(i)] = i;
      std::shuffle(slots.begin(), slots.end(), rng);
      slots.resize(kKeep);
      std::sort(slots.begin(), slots.end());
      keep.insert(keep.end(), slots.begin(), slots.end());
    }
    for (auto [bytes, view] : {std::pair{&ours.k, &ours.layer.k}, std::pair{&ours.v, &ours.layer.v}}) {
      KvGatherArgs args;
      args.src_table = src_table.data();
      args.dst_table = dst_table.data();
      args.keep = keep.data();
      args.n_keep = kKeep;
      args.block_size = kBlockSize;
      args.row_bytes = view->row_bytes;
      args.slice_bytes = kv_slice_bytes(type, kHeadDim);
      const auto items = static_cast<int64_t>(keep.size());
      std::vector<uint8_t> kept(static_cast<size_t>(items) * args.slice_bytes);
      for (int64_t item = 0; item < items; ++item) {  // the gather kernel
        std::memcpy(kept.data() + static_cast<size_t>(item) * args.slice_bytes,
                    bytes->data() + kv_gather_source(args, item), args.slice_bytes);
      }
      for (int64_t item = 0; item < items; ++item) {  // then the scatter kernel
        std::memcpy(bytes->data() + kv_gather_dest(args, item),
                    kept.data() + static_cast<size_t>(item) * args.slice_bytes, args.slice_bytes);
      }
    }
    CpuBackend cpu(2);
    cpu.gather_kv_rows(cpus.layer, src_table, dst_table, keep, kHeadDim, kHeadDim);
    EXPECT_EQ(ours.k, cpus.k) << tensor::dtype_name(type);
    EXPECT_EQ(ours.v, cpus.v) << tensor::dtype_name(type);
    EXPECT_NE(ours.k, random_cache(type, 7).k) << "nothing moved";
  }
}

struct ScoreCase {
  DType type;
  int64_t window;
  float softcap;
};

class KvScoreMath : public ::testing::TestWithParam<ScoreCase> {};

TEST_P(KvScoreMath, ScoresLikeTheKernelsMatchTheCpu) {
  const ScoreCase c = GetParam();
  constexpr int64_t kHeads = 4, kTokens = 7, kStart = 33, kFirstRow = 2;
  HostCache cache = random_cache(c.type, 21);
  const std::vector<int32_t> table = {5, 2, 0};  // 48 slots: positions 0..39 used
  const SequenceSlice seq{0, kTokens, kStart, table};
  AttentionConfig config;
  config.n_heads = kHeads;
  config.n_kv_heads = kKvHeads;
  config.head_dim = kHeadDim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  config.sliding_window = c.window;
  config.softcap = c.softcap;
  std::vector<float> q = random_values(static_cast<size_t>(kHeadDim * kHeads * kTokens), 22, -2.0f, 2.0f);
  const TensorView qv{DType::F32, {kHeadDim, kHeads, kTokens, 1}, kHeadDim * sizeof(float), q.data()};
  const int64_t n_slots = kStart + kTokens;

  // The CPU backend's table, from a non-zero start (the op adds into it).
  std::vector<float> want(static_cast<size_t>(n_slots * kKvHeads), 0.25f);
  CpuBackend cpu(2);
  cpu.attention_scores(qv, cache.layer, seq, kFirstRow, config, want.data(), kKvHeads);

  // The kernels' work: kv_score_rows per (row, head), then kv_score_sum per (slot, KV head).
  KvScoreArgs a;
  a.q = q.data();
  a.q_stride = kHeadDim;
  a.n_heads = kHeads;
  a.n_kv_heads = kKvHeads;
  a.head_dim = kHeadDim;
  a.k = cache.k.data();
  a.k_row_bytes = cache.layer.k.row_bytes;
  a.k_f16 = c.type == DType::F16;
  a.block_table = table.data();
  a.block_size = kBlockSize;
  a.start_pos = kStart;
  a.window = c.window;
  a.scale = config.scale;
  a.softcap = c.softcap;
  const int64_t rows = kTokens - kFirstRow;
  std::vector<float> probs(static_cast<size_t>(rows * kHeads * n_slots), 0.0f);
  for (int64_t r = kFirstRow; r < kTokens; ++r) {
    for (int64_t h = 0; h < kHeads; ++h) {
      std::vector<float> query(kHeadDim);
      for (int64_t d = 0; d < kHeadDim; ++d) query[static_cast<size_t>(d)] = kv_score_query(a, r, h, d);
      float* out = probs.data() + ((r - kFirstRow) * kHeads + h) * n_slots;
      const int64_t lo = kv_score_first_slot(a, r), pos = kStart + r;
      float max = -INFINITY;
      for (int64_t s = lo; s <= pos; ++s) max = std::max(max, out[s] = kv_score_key(a, query.data(), s, h / 2));
      double sum = 0.0;
      for (int64_t s = lo; s <= pos; ++s) sum += static_cast<double>(std::exp(hd::sub_rn(out[s], max)));
      const float inv = kv_score_inverse(sum);
      for (int64_t s = lo; s <= pos; ++s) out[s] = kv_score_probability(a, out[s], max, inv);
    }
  }
  std::vector<float> got(want.size(), 0.25f);
  for (int64_t slot = 0; slot < n_slots; ++slot) {
    for (int64_t kvh = 0; kvh < kKvHeads; ++kvh) {
      float total = 0.0f;
      for (int64_t r = 0; r < rows; ++r) {
        for (int64_t g = 0; g < 2; ++g)
          total += probs[static_cast<size_t>((r * kHeads + kvh * 2 + g) * n_slots + slot)];
      }
      got[static_cast<size_t>(slot * kKvHeads + kvh)] += total;  // the host adds the call's sums
    }
  }
  // A probability moves by the f16 rounding of the CPU's (2^-11 of itself) when its score's
  // order of sums differs; 10 of them per entry (5 rows x 2 heads).
  const double unit = c.type == DType::F16 ? std::ldexp(1.0, -10) : 1e-5;
  double seen = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], unit * std::abs(want[i] - 0.25) + 1e-6) << "slot " << i / 2 << " KV head " << i % 2;
    seen += want[i] - 0.25;
  }
  // Each scored row's probabilities over its slots sum to 1, per query head: 5 rows x 4 heads.
  EXPECT_NEAR(seen, static_cast<double>(rows * kHeads), 1e-2);
}

INSTANTIATE_TEST_SUITE_P(Cases, KvScoreMath,
                         ::testing::Values(ScoreCase{DType::F16, 0, 0.0f}, ScoreCase{DType::F32, 0, 0.0f},
                                           ScoreCase{DType::F16, 8, 0.0f}, ScoreCase{DType::F16, 0, 0.7f},
                                           ScoreCase{DType::F32, 12, 0.7f}));

}  // namespace
}  // namespace lumen::backend::cuda
