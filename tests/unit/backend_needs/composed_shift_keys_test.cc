// shift_keys composed from a backend's own ops (common/composed_shift_keys.h), the way the CUDA
// backend runs context shift, against the CPU's kernel, on the CPU: every KV cache type (a
// rotated q8_0 cache too), every rope style and scaling, whole blocks of a paged cache. Keys must
// agree to the cache's rounding (the kernel normalizes its cos/sin pairs, the composition
// computes them at magnitude 1: one float rounding apart before the cache's own), values and
// the other blocks must not move.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "lumen/engine.h"
#include "lumen_testdata.h"
#include "model/synth.h"
#include "tensor/quantize.h"
#include "unit/backend/kernel_test_util.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

using backend::KvLayer;
using backend::RopeConfig;
using backend::TensorView;
using tensor::DType;

constexpr int64_t kHeadDim = 64, kHeads = 2, kRow = kHeadDim * kHeads, kBlock = 16, kBlocks = 5;

struct Cache {
  Cache(DType type, bool rotated) : row_bytes(backend::kv_slice_bytes(type, kRow)) {
    k.resize(row_bytes * kBlock * kBlocks);
    v.resize(k.size());
    layer = {TensorView{type, {kRow, kBlock, kBlocks, 1}, row_bytes, k.data()},
             TensorView{type, {kRow, kBlock, kBlocks, 1}, row_bytes, v.data()}, kBlock, rotated};
  }
  // Row r of K (or V) widened to f32.
  std::vector<float> row(const std::vector<uint8_t>& bytes, int64_t r) const {
    std::vector<float> out(kRow);
    tensor::dequantize_row(layer.k.type, bytes.data() + static_cast<size_t>(r) * row_bytes, out.data(), kRow);
    return out;
  }
  size_t row_bytes;
  std::vector<uint8_t> k, v;
  KvLayer layer;
};

struct RopeCase {
  const char* name;
  RopeConfig rope;
};

std::vector<RopeCase> rope_cases() {
  std::vector<RopeCase> cases(5);
  cases[0].name = "normal";
  cases[1].name = "neox, half the dimensions";
  cases[1].rope.neox = true;
  cases[1].rope.rope_dims = kHeadDim / 2;
  cases[2].name = "linear";
  cases[2].rope.scaling = backend::RopeScalingType::Linear;
  cases[2].rope.scaling_factor = 4.0;
  cases[3].name = "yarn with an attention factor";
  cases[3].rope.scaling = backend::RopeScalingType::Yarn;
  cases[3].rope.scaling_factor = 4.0;
  cases[3].rope.original_context = 256;
  cases[3].rope.attn_factor = 0.9;
  cases[4].name = "freq factors";
  static std::vector<float> factors(kHeadDim / 2);
  for (size_t i = 0; i < factors.size(); ++i) factors[i] = 1.0f + static_cast<float>(i % 5);
  cases[4].rope.freq_factors = factors.data();
  for (RopeCase& c : cases) {
    if (c.rope.rope_dims == 0) c.rope.rope_dims = kHeadDim;
    c.rope.freq_base = 10000.0;
  }
  return cases;
}

struct TypeCase {
  DType type;
  bool rotated;
  double tolerance;  // per key value, for values up to about 1.4
};

TEST(ComposedShiftKeys, MatchesTheCpuKernel) {
  const TypeCase types[] = {{DType::F32, false, 1e-5},        {DType::F16, false, 2e-3},
                            {DType::BF16, false, 1.6e-2},     {DType::Q8_0, false, 1.5 / 127},
                            {DType::Q8_0, true, 1.5 / 127},   {DType::Q4_0, false, 1.5 / 7},
                            {DType::FP8_E4M3, false, 1.5 / 8}};
  backend::CpuBackend native(2), composed(2);
  composed.set_composed_ops(true);
  const std::vector<int32_t> table = {4, 1, 3};  // block 0 and 2 must not move
  for (const TypeCase& t : types) {
    for (const RopeCase& c : rope_cases()) {
      SCOPED_TRACE(std::string(tensor::dtype_name(t.type)) + (t.rotated ? " rotated, " : ", ") + c.name);
      Cache a(t.type, t.rotated), b(t.type, t.rotated);
      const int64_t n = kBlock * kBlocks;
      std::vector<float> k = backend::testing::random_values(static_cast<size_t>(kRow * n), 3);
      std::vector<float> v = backend::testing::random_values(static_cast<size_t>(kRow * n), 4);
      const std::vector<int32_t> all = {0, 1, 2, 3, 4};
      const std::vector<backend::SequenceSlice> seqs = {{0, n, 0, all}};
      native.store_kv(backend::f32_matrix(k.data(), kRow, n), backend::f32_matrix(v.data(), kRow, n), seqs, a.layer);
      native.store_kv(backend::f32_matrix(k.data(), kRow, n), backend::f32_matrix(v.data(), kRow, n), seqs, b.layer);
      const std::vector<uint8_t> k_before = a.k, v_before = a.v;

      native.shift_keys(a.layer, table, -37, c.rope, kHeadDim);
      composed.shift_keys(b.layer, table, -37, c.rope, kHeadDim);

      EXPECT_EQ(b.v, v_before) << "values must not move";
      double worst = 0.0, moved = 0.0;
      int64_t identical = 0, compared = 0;
      for (int64_t r = 0; r < n; ++r) {
        const bool shifted = std::find(table.begin(), table.end(), r / kBlock) != table.end();
        const std::vector<float> want = a.row(a.k, r), got = b.row(b.k, r), before = a.row(k_before, r);
        for (int64_t d = 0; d < kRow; ++d) {
          const auto i = static_cast<size_t>(d);
          if (!shifted) {
            ASSERT_EQ(got[i], before[i]) << "row " << r << ": another block moved";
          }
          worst = std::max(worst, static_cast<double>(std::abs(got[i] - want[i])));
          identical += got[i] == want[i] ? 1 : 0;
          ++compared;
          moved = std::max(moved, static_cast<double>(std::abs(got[i] - before[i])));
        }
      }
      EXPECT_LE(worst, t.tolerance) << identical << " of " << compared << " identical";
      EXPECT_GT(moved, 0.2) << "the keys were not rotated";
    }
  }
}

TEST(ComposedShiftKeys, RefusesALatentCacheBeforeWriting) {
  backend::CpuBackend cpu(1);
  cpu.set_composed_ops(true);
  Cache c(DType::F16, false);
  c.layer.v = c.layer.k;  // values a view of the keys
  c.layer.v.dims[0] = kRow / 2;
  const std::vector<uint8_t> before = c.k;
  RopeConfig rope;
  rope.rope_dims = kHeadDim;
  const std::vector<int32_t> table = {1};
  EXPECT_THROW(cpu.shift_keys(c.layer, table, -16, rope, kHeadDim), Error);
  EXPECT_EQ(c.k, before);
}

// A generation three times its context through the engine (context shift every few blocks,
// each shifting every layer's kept keys): the composed op's greedy tokens are the kernel's.
TEST(ComposedShiftKeys, EngineGenerationPastTheContextMatchesTheKernel) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lumen_composed_shift_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  model::SynthOptions options;
  options.preset = "smollm2-135m";
  options.type = DType::Q8_0;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.seed = 11;
  options.block_count = 2;
  options.threads = 2;
  model::write_synthetic_model(options, path);
  backend::CpuBackend cpu(2);
  engine::LoadedModel model = engine::LoadedModel::load(path, cpu);
  auto run = [&](bool composed) {
    cpu.set_composed_ops(composed);
    EngineConfig config;
    config.block_size = 16;
    config.max_model_len = 64;
    config.kv_cache_full_sequences = 1;
    config.context_overflow = ContextOverflow::Shift;
    config.context_keep_tokens = 4;
    Engine engine(engine::borrow_model(model, cpu), config);
    std::vector<int32_t> prompt;
    for (int j = 0; j < 20; ++j) prompt.push_back(300 + j * 37);
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = 170;
    p.ignore_eos = true;
    RequestHandle handle = engine.add_request(prompt, p);
    while (engine.has_unfinished()) engine.step();
    EXPECT_GE(engine.stats().context_shifts, 3u);
    cpu.set_composed_ops(false);
    return handle.collect().tokens;
  };
  const std::vector<int32_t> native = run(false);
  const std::vector<int32_t> composed = run(true);
  EXPECT_EQ(native.size(), 170u);
  EXPECT_EQ(composed, native);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lumen::testing
