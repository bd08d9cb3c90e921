// Importance-based KV eviction on CUDA (kv_eviction.cu, written without a GPU) against the CPU
// backend: attention_scores' table within the rounding of the probabilities (f16 on an f16 cache),
// over prompt rows and a decode row, with a window and a softcap; gather_kv_rows' cache bytes
// equal, compacting in place. The backend declares the ops only with kv_eviction on, which the
// test sets for itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "paged_cache_fixture.h"
#include "cuda_test_util.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

// The CUDA backend with eviction declared, for the scope.
class EvictionDeclared {
 public:
  EvictionDeclared() : saved_(gpu()->options()) {
    CudaBackendOptions on = saved_;
    on.kv_eviction = true;
    gpu()->set_options(on);
  }
  ~EvictionDeclared() { gpu()->set_options(saved_); }
  EvictionDeclared(const EvictionDeclared&) = delete;
  EvictionDeclared& operator=(const EvictionDeclared&) = delete;

 private:
  CudaBackendOptions saved_;
};

struct EvictionCase {
  DType type;
  int64_t window;
  float softcap;
  int64_t n_tokens, first_row;  // the slice's rows and the first scored
};

class CudaKvEviction : public ::testing::TestWithParam<EvictionCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaKvEviction, ScoresAndGatherMatchTheCpu) {
  const EvictionCase c = GetParam();
  const EvictionDeclared declared;
  constexpr int64_t kHeads = 8, kKvHeads = 2, kHeadDim = 64, kBlockSize = 16, kBlocks = 40;
  constexpr int64_t kStart = 300;
  const int64_t kv_dim = kKvHeads * kHeadDim, n_slots = kStart + c.n_tokens;
  PagedCache host(c.type, kv_dim, kBlockSize, kBlocks);
  std::vector<int32_t> table;
  for (int32_t b = 0; b < (n_slots + kBlockSize - 1) / kBlockSize; ++b) table.push_back((b * 7) % kBlocks);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> uniform(-1.5f, 1.5f);
  std::vector<float> k(static_cast<size_t>(kv_dim)), v(k.size());
  for (int64_t pos = 0; pos < n_slots; ++pos) {
    for (float& x : k) x = uniform(rng);
    for (float& x : v) x = uniform(rng);
    host.write(PagedCache::row_of(table, pos, kBlockSize), k.data(), v.data());
  }
  DeviceTensor dk = to_device(host.layer().k), dv = to_device(host.layer().v);
  KvLayer device = host.layer();
  device.k = dk.view;
  device.v = dv.view;
  std::vector<float> q(static_cast<size_t>(kHeadDim * kHeads * c.n_tokens));
  for (float& x : q) x = uniform(rng);
  const TensorView hq{DType::F32, {kHeadDim, kHeads, c.n_tokens, 1}, kHeadDim * sizeof(float), q.data()};
  DeviceTensor dq = to_device(hq);
  AttentionConfig config;
  config.n_heads = kHeads;
  config.n_kv_heads = kKvHeads;
  config.head_dim = kHeadDim;
  config.scale = 0.125f;
  config.sliding_window = c.window;
  config.softcap = c.softcap;
  const SequenceSlice seq{0, c.n_tokens, kStart, table};

  std::vector<float> want(static_cast<size_t>(n_slots * kKvHeads), 0.5f), got = want;
  cpu().attention_scores(hq, host.layer(), seq, c.first_row, config, want.data(), kKvHeads);
  gpu()->attention_scores(dq.view, device, seq, c.first_row, config, got.data(), kKvHeads);
  const double unit = c.type == DType::F16 ? std::ldexp(1.0, -10) : 1e-5;
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], unit * std::abs(want[i] - 0.5) + 1e-6) << "slot " << i / kKvHeads;
  }

  // Compaction in place: each head keeps its own 100 slots, into the sequence's first blocks.
  std::vector<int32_t> keep;
  for (int64_t h = 0; h < kKvHeads; ++h) {
    std::vector<int32_t> slots(static_cast<size_t>(n_slots));
    for (int32_t s = 0; s < static_cast<int32_t>(n_slots); ++s) slots[static_cast<size_t>(s)] = s;
    std::shuffle(slots.begin(), slots.end(), rng);
    slots.resize(100);
    std::sort(slots.begin(), slots.end());
    keep.insert(keep.end(), slots.begin(), slots.end());
  }
  const std::vector<int32_t> dst(table.begin(), table.begin() + 7);  // 112 slots
  cpu().gather_kv_rows(host.layer(), table, dst, keep, kHeadDim, kHeadDim);
  gpu()->gather_kv_rows(device, table, dst, keep, kHeadDim, kHeadDim);
  const auto bytes_of = [](const TensorView& t) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    return std::vector<uint8_t>(p, p + t.row_bytes * static_cast<size_t>(t.rows()));
  };
  EXPECT_EQ(bytes_of(host.layer().k), download_bytes(device.k)) << "gather_kv_rows K";
  EXPECT_EQ(bytes_of(host.layer().v), download_bytes(device.v)) << "gather_kv_rows V";
}

INSTANTIATE_TEST_SUITE_P(Cases, CudaKvEviction,
                         ::testing::Values(EvictionCase{DType::F16, 0, 0.0f, 40, 8},     // SnapKV's window
                                           EvictionCase{DType::F16, 0, 0.0f, 1, 0},      // H2O's decode row
                                           EvictionCase{DType::F32, 0, 0.0f, 40, 0},     // a whole prompt
                                           EvictionCase{DType::F16, 128, 0.0f, 40, 30},  // a sliding window
                                           EvictionCase{DType::F16, 0, 30.0f, 5, 0}));   // a softcap

}  // namespace
}  // namespace lumen::backend::testing
