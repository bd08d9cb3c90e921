// Attention sinks on the CUDA backend (AttentionConfig::sinks, CudaBackendOptions::
// attention_sinks; src/backend/cuda/attention_sinks.h) against the CPU backend's, which
// tests/unit/backend/attention_sinks_test.cc holds to a double reference. Per head a sink far
// below the scores (no effect), among them, near their top, and far above them (nearly all the
// weight: a one-pass row is scaled down by exp(max - sink)). Decode rows whose contexts span up to
// six 256-key splits (the sink must join once, where the splits merge), prefill rows, sliding
// windows, GQA groups wider than an item; both f16 modes, an f32 cache, the plan-free decode
// attention with and without the fused combine, and the tensor-core prefill. Tolerances as
// attention_test.cc's against the CPU. Without the sinks every case is far off (the checks can
// fail).
#include <gtest/gtest.h>

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "attention_setup.h"
#include "cuda_test_util.h"
#include "util/error.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

// The scores (|q| <= 2.5, |k| <= 1, scale 1 / sqrt(head_dim)) lie within about +-4. Each head's
// sink its own, and the four levels in another order in each group of four heads, so a head
// index off by a GQA group or an item's first head (multiples of 4) reads another level.
std::vector<float> sinks_for(int64_t n_heads) {
  constexpr std::array<float, 4> kLevels = {-30.0f, 0.5f, 3.0f, 25.0f};
  std::vector<float> sinks;
  for (int64_t h = 0; h < n_heads; ++h) {
    sinks.push_back(kLevels[static_cast<size_t>((h + h / 4) % 4)] + 0.125f * static_cast<float>(h));
  }
  return sinks;
}

// Largest difference over head `head`'s outputs, relative to the largest of them in `expected`.
double head_relative_difference(const std::vector<float>& expected, const std::vector<float>& got, const AttnCase& c,
                                int64_t head) {
  double diff = 0.0, scale = 0.0;
  for (size_t i = 0; i < expected.size(); ++i) {
    if (static_cast<int64_t>(i) / c.head_dim % c.n_heads != head) continue;
    diff = std::max(diff, std::fabs(static_cast<double>(expected[i]) - static_cast<double>(got[i])));
    scale = std::max(scale, std::fabs(static_cast<double>(expected[i])));
  }
  return scale > 0.0 ? diff / scale : diff;
}

class CudaAttentionSinks : public ::testing::TestWithParam<AttnCase> {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_CUDA();
    declared_.emplace([](CudaBackendOptions& o) {
      o.attention_sinks = true;
      o.tensor_core_prefill = false;  // its own test below
    });
  }

 private:
  std::optional<ScopedCudaOptions> declared_;
};

// Both f16 modes (an f32 cache runs the one-pass kernels either way) against the CPU with the
// sinks. With an f32 cache both backends close each row in f32 the same way, so every head is
// held to 2e-5 of its own outputs, the one whose sink takes nearly all the weight included.
TEST_P(CudaAttentionSinks, MatchTheCpuInBothModesAndAreNeeded) {
  AttnSetup s(GetParam(), 21);
  s.set_sinks(sinks_for(s.c.n_heads));
  const std::vector<float> expected = s.run_cpu();
  DeviceTensor dq = to_device(s.host_q());
  const bool f16 = s.c.cache_type == DType::F16;
  for (const bool exact : {true, false}) {
    if (!exact && !f16) continue;
    ScopedCudaOptions mode([&](CudaBackendOptions& o) { o.exact_f16_attention = exact; });
    const std::string what = std::string(s.c.name) + (exact ? " exact" : " flash");
    const double tolerance = !f16 ? 2e-5 : exact ? 2e-4 : 3e-3;
    EXPECT_LE(max_relative_difference(expected, s.run_gpu(s.slices, dq)), tolerance) << what;
    EXPECT_GT(max_relative_difference(expected, s.run_gpu(s.slices, dq, true)), 1e-2) << what << " without sinks";
  }
  if (!f16) {
    const std::vector<float> got = s.run_gpu(s.slices, dq);
    for (int64_t h = 0; h < s.c.n_heads; ++h) {
      EXPECT_LE(head_relative_difference(expected, got, s.c, h), 2e-5)
          << s.c.name << " head " << h << ", sink " << s.sinks[static_cast<size_t>(h)];
    }
  }
}

// A decode step laid out with decode tables (the plan-free decode attention a CUDA graph
// replays), with the fused combine (the last block of an item merges it) and without, gives the
// planned attention's bits with the sinks: each sequence decodes its last position.
TEST_P(CudaAttentionSinks, DecodeTablesAndTheFusedCombineGiveThePlannedBits) {
  AttnSetup s(GetParam(), 22);
  s.set_sinks(sinks_for(s.c.n_heads));
  DeviceTensor dq = to_device(s.host_q());
  const AttnSetup::DecodeStep step_layout = s.decode_step();
  const std::vector<SequenceSlice>& decode = step_layout.slices;
  const auto rows = static_cast<std::ptrdiff_t>(decode.size() * static_cast<size_t>(s.c.n_heads * s.c.head_dim));
  const auto decoded = [&] {
    const std::vector<float> out = s.run_gpu(decode, dq);
    return std::vector<float>(out.begin(), out.begin() + rows);
  };
  for (const bool exact : {true, false}) {
    if (!exact && s.c.cache_type != DType::F16) continue;
    std::vector<float> planned;
    {
      ScopedCudaOptions plain([&](CudaBackendOptions& o) {
        o.exact_f16_attention = exact;
        o.step_graphs = false;
      });
      planned = decoded();
    }
    for (const bool fused : {false, true}) {
      ScopedCudaOptions tables([&](CudaBackendOptions& o) {
        o.exact_f16_attention = exact;
        o.step_graphs = true;
        o.fused_attention_combine = fused;
      });
      gpu()->begin_step(step_layout.metadata());
      const std::vector<float> derived = decoded();
      gpu()->end_step();
      EXPECT_EQ(derived, planned) << s.c.name << (exact ? " exact" : " flash") << (fused ? ", fused combine" : "");
    }
  }
}

// The tensor-core prefill closes its rows with the sinks (tensor_core_prefill_math.h's
// prefill_output): sequences of 16 rows or more through it, the others through the split-KV
// kernels, within its 2e-3 of the CPU; the long sequences' rows really took it (they differ from
// the split-KV kernels'), and without the sinks they are far off.
TEST_P(CudaAttentionSinks, TensorCorePrefillClosesItsRowsWithThem) {
  AttnSetup s(GetParam(), 23);
  if (s.c.cache_type != DType::F16) GTEST_SKIP() << "the tensor-core prefill reads f16 caches only";
  bool any_long = false;
  for (const SeqSpec& seq : s.c.seqs) any_long = any_long || seq.n_tokens >= 16;
  if (!any_long) GTEST_SKIP() << "no sequence of 16 rows or more";
  s.set_sinks(sinks_for(s.c.n_heads));
  const std::vector<float> expected = s.run_cpu();
  DeviceTensor dq = to_device(s.host_q());
  const std::vector<float> split_kv = s.run_gpu(s.slices, dq);
  ScopedCudaOptions tensor_cores([](CudaBackendOptions& o) { o.tensor_core_prefill = true; });
  const std::vector<float> got = s.run_gpu(s.slices, dq);
  EXPECT_LE(max_relative_difference(expected, got), 2e-3) << s.c.name;
  EXPECT_GT(max_relative_difference(expected, s.run_gpu(s.slices, dq, true)), 1e-2) << s.c.name << " without sinks";
  const int64_t row = s.c.n_heads * s.c.head_dim;
  for (const SequenceSlice& seq : s.slices) {
    if (seq.n_tokens < 16) continue;
    const auto begin = static_cast<std::ptrdiff_t>(seq.first_token * row);
    const auto end = static_cast<std::ptrdiff_t>((seq.first_token + seq.n_tokens) * row);
    EXPECT_NE(std::vector<float>(split_kv.begin() + begin, split_kv.begin() + end),
              std::vector<float>(got.begin() + begin, got.begin() + end))
        << s.c.name << " sequence at token " << seq.first_token << " (not taken?)";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaAttentionSinks,
    ::testing::Values(
        // Decode rows over 1, 3 and 6 splits.
        AttnCase{"decode_long_f16", DType::F16, 8, 2, 64, 16, 0, 0.0f, {{700, 1}, {37, 1}, {1300, 1}}},
        // Prefill rows, the second sequence's across a split boundary.
        AttnCase{"prefill_gqa4_f16", DType::F16, 8, 2, 64, 16, 0, 0.0f, {{0, 40}, {240, 20}}},
        // Windows spanning two splits (a decode row) and inside one (a prompt's rows).
        AttnCase{"window_f32_block7", DType::F32, 4, 4, 128, 7, 300, 0.0f, {{600, 2}, {0, 20}}},
        AttnCase{"window_f16", DType::F16, 8, 4, 64, 16, 100, 0.0f, {{520, 1}, {200, 24}}},
        // Sixteen heads a KV head: two items of eight, the second's heads from 8 on.
        AttnCase{"group16_f16", DType::F16, 16, 1, 64, 16, 0, 0.0f, {{300, 3}}},
        // Heads of 256 (no fused combine), a window and a softcap.
        AttnCase{"window_softcap_d256_f16", DType::F16, 8, 4, 256, 16, 40, 30.0f, {{0, 33}, {290, 1}}}),
    [](const ::testing::TestParamInfo<AttnCase>& case_info) { return std::string(case_info.param.name); });

// Declared only with the option (off by default until a GPU run checks it); the sinks must be in
// device memory, where the model's weights put them.
TEST(CudaAttentionSinksRefusals, UndeclaredOrHostSinksAreRefused) {
  LUMEN_REQUIRE_CUDA();
  AttnSetup s(AttnCase{"small_f16", DType::F16, 4, 2, 64, 16, 0, 0.0f, {{10, 2}}}, 24);
  s.set_sinks(sinks_for(s.c.n_heads));
  DeviceTensor dq = to_device(s.host_q());
  const auto refusal = [&](const AttentionConfig& config) -> std::string {
    DeviceTensor out = device_matrix(s.c.head_dim, s.c.n_heads * s.n_tokens, s.c.head_dim);
    out.view.dims = {s.c.head_dim, s.c.n_heads, s.n_tokens, 1};
    try {
      gpu()->attention(dq.view, s.device_layer, s.slices, config, out.view);
    } catch (const Error& e) {
      return e.what();
    }
    return "<accepted>";
  };
  AttentionConfig on_device = s.config, on_host = s.config;
  on_device.sinks = static_cast<const float*>(s.device_sinks.view.data);
  on_host.sinks = s.sinks.data();
  {
    ScopedCudaOptions off([](CudaBackendOptions& o) { o.attention_sinks = false; });
    EXPECT_FALSE(gpu()->supports(BackendFeature::AttentionSinks));
    EXPECT_NE(refusal(on_device).find("does not take attention sinks"), std::string::npos);
  }
  ScopedCudaOptions on([](CudaBackendOptions& o) { o.attention_sinks = true; });
  EXPECT_TRUE(gpu()->supports(BackendFeature::AttentionSinks));
  EXPECT_EQ(refusal(on_device), "<accepted>");
  EXPECT_NE(refusal(on_host).find("not in device memory"), std::string::npos);
}

}  // namespace
}  // namespace lumen::backend::testing
