// An encoder's attention on the tensor-core prefill kernel (bidirectional_attention with
// CudaBackendOptions::encoder_tensor_cores: every row sees its whole sequence, keys without block
// tables, heads padded to a tile), emulated on a CPU (tensor_core_emulation.h) against the CPU
// backend's attention; and the padding and key ranges it relies on. CudaEncoderTensorCores in
// tests/unit/backend_cuda checks the kernel itself on a GPU.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "tensor_core_emulation.h"

namespace lumen::backend::cuda {
namespace {

using emulation::emulate_kernel;
using emulation::EmulatedCall;
using emulation::max_relative_difference;
using tensor::DType;

struct EncoderCase {
  int64_t n_heads, n_kv_heads, head_dim, batch_rows;
  std::vector<std::pair<int64_t, int64_t>> seqs;  // (first row, rows)
};

void PrintTo(const EncoderCase& c, std::ostream* os) {
  *os << c.n_heads << " heads / " << c.n_kv_heads << " KV heads of " << c.head_dim << ", " << c.seqs.size()
      << " sequences";
}

class TensorCoreEncoderEmulated : public ::testing::TestWithParam<EncoderCase> {};

// The keys and values packed as cuda_encoder_ops.cc packs them (launch_pack_heads_f16: rounded to
// f16, heads padded with zeros), the kernel emulated over the encoder plan, against the CPU
// backend's bidirectional_attention (in double): within 1e-3 of the largest output, as the causal
// cases. Rows no sequence owns keep what the output held.
TEST_P(TensorCoreEncoderEmulated, MatchesTheCpuBackendsBidirectionalAttention) {
  const EncoderCase& c = GetParam();
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t n = c.batch_rows, q_row = c.n_heads * c.head_dim, kv_row = c.n_kv_heads * c.head_dim;
  std::vector<float> q(static_cast<size_t>(n * q_row)), k(static_cast<size_t>(n * kv_row)), v(k.size());
  for (float& x : q) x = 2.5f * uniform(rng);
  for (float& x : k) x = uniform(rng);
  for (float& x : v) x = 2.0f * uniform(rng);
  std::vector<SequenceSlice> slices;
  for (const auto& [first, rows] : c.seqs) slices.push_back({first, rows, 0, {}});
  AttentionConfig config;
  config.n_heads = c.n_heads;
  config.n_kv_heads = c.n_kv_heads;
  config.head_dim = c.head_dim;
  config.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));

  CpuBackend cpu(1);
  std::vector<float> expected(q.size(), 42.0f), qc = q, kc = k, vc = v;
  const auto view = [](std::vector<float>& data, int64_t row, int64_t rows) {
    return TensorView{DType::F32, {row, rows, 1, 1}, static_cast<size_t>(row) * 4, data.data()};
  };
  TensorView out_view = view(expected, q_row, n);
  cpu.bidirectional_attention(view(qc, q_row, n), view(kc, kv_row, n), view(vc, kv_row, n), slices, config, out_view);

  const int64_t padded = prefill_padded_head_dim(c.head_dim);
  const size_t row_values = static_cast<size_t>(c.n_kv_heads * padded);
  std::vector<uint16_t> k16(static_cast<size_t>(n) * row_values, 0), v16(k16.size(), 0);
  for (int64_t r = 0; r < n; ++r) {
    for (int64_t h = 0; h < c.n_kv_heads; ++h) {
      for (int64_t d = 0; d < c.head_dim; ++d) {
        const auto from = static_cast<size_t>(r * kv_row + h * c.head_dim + d);
        const auto to = static_cast<size_t>(r) * row_values + static_cast<size_t>(h * padded + d);
        k16[to] = tensor::float_to_fp16(k[from]);
        v16[to] = tensor::float_to_fp16(v[from]);
      }
    }
  }
  std::vector<float> got(q.size(), 42.0f);
  EmulatedCall call;
  call.plan = plan_bidirectional_tensor_core(slices, config);
  ASSERT_TRUE(call.plan.block_tables.empty());
  call.q = q.data();
  call.q_head_stride = c.head_dim;
  call.q_token_stride = q_row;
  call.out = got.data();
  call.out_head_stride = c.head_dim;
  call.out_token_stride = q_row;
  call.dims = c.head_dim;
  call.n_heads = c.n_heads;
  call.group = c.n_heads / c.n_kv_heads;
  call.bidirectional = true;
  call.score = {config.scale, 0.0f, 0.0f};
  call.k = k16.data();
  call.v = v16.data();
  call.row_values = row_values;
  switch (padded) {
    case 64: emulate_kernel<64>(call); break;
    case 80: emulate_kernel<80>(call); break;
    case 128: emulate_kernel<128>(call); break;
    default: FAIL() << "no tile for head dim " << c.head_dim;
  }
  EXPECT_LE(max_relative_difference(expected, got), 1e-3);
  for (size_t i = 0; i < got.size(); ++i) {
    if (expected[i] == 42.0f) {
      ASSERT_EQ(got[i], 42.0f) << "value " << i << " of a row no sequence owns";
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, TensorCoreEncoderEmulated,
    ::testing::Values(EncoderCase{4, 4, 72, 100, {{0, 100}}},                         // SigLIP's heads of 72, padded
                      EncoderCase{6, 2, 64, 50, {{3, 5}, {8, 1}, {9, 0}, {10, 40}}},  // GQA; rows of no sequence
                      EncoderCase{2, 2, 100, 70, {{0, 33}, {33, 37}}}),               // 100 padded to 128
    [](const ::testing::TestParamInfo<EncoderCase>& case_info) { return "case" + std::to_string(case_info.index); });

TEST(TensorCoreEncoderPlan, PadsHeadsToTheNarrowestTileAndEveryRowSeesItsWholeSequence) {
  EXPECT_EQ(prefill_padded_head_dim(0), 0);
  EXPECT_EQ(prefill_padded_head_dim(1), 64);
  EXPECT_EQ(prefill_padded_head_dim(64), 64);
  EXPECT_EQ(prefill_padded_head_dim(72), 80);
  EXPECT_EQ(prefill_padded_head_dim(80), 80);
  EXPECT_EQ(prefill_padded_head_dim(81), 128);
  EXPECT_EQ(prefill_padded_head_dim(256), 256);
  EXPECT_EQ(prefill_padded_head_dim(257), 0);
  const PrefillRow row = prefill_task_row(true, 30, 7, 4);  // the window does not apply
  EXPECT_EQ(row.first, 0);
  EXPECT_EQ(row.last, 29);
  // Causal rows at positions 10 and 12 with a window of 8: keys 3..10 and 5..12; both see 5..10.
  const PrefillTaskKeys keys{prefill_task_row(false, 0, 10, 8), prefill_task_row(false, 0, 12, 8)};
  EXPECT_EQ(keys.lo(), 3);
  EXPECT_EQ(keys.hi(), 12);
  EXPECT_TRUE(keys.all_visible(5, 4));
  EXPECT_TRUE(keys.all_visible(7, 4));
  EXPECT_FALSE(keys.all_visible(4, 4));  // key 4: out of the second row's window
  EXPECT_FALSE(keys.all_visible(8, 4));  // key 11: after the first row
  const PrefillTaskKeys encoder{prefill_task_row(true, 30, 0, 0), prefill_task_row(true, 30, 29, 0)};
  EXPECT_TRUE(encoder.all_visible(0, 30));
  EXPECT_FALSE(encoder.all_visible(16, 16));  // keys 30 and 31 are past the sequence
}

}  // namespace
}  // namespace lumen::backend::cuda
