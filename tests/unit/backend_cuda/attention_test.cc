// The CUDA attention and K/V cache ops against the CPU backend's, on caches whose blocks are
// shuffled between sequences and whose rows are wider than their data: decode and prefill,
// several sequences at once, GQA (groups of 1, 3, 4 and 16), sliding windows, softcap, f16 and
// f32 caches, contexts that span several 256-key splits, head dims 64 to 256, block sizes 16
// and 7.
//
// Tolerances (largest difference over the largest |out| of the CPU):
//  - f32 cache: 2e-5. Both run an online softmax in f32; sums are ordered differently.
//  - f16 cache, exact mode (the default): 2e-4. Both round each probability to f16 after a
//    whole-row softmax; a probability within an ulp of a rounding boundary may round the other
//    way (2^-11 of that probability), which a 1e-4-style bound would turn into flaky failures.
//  - f16 cache, flash mode: 3e-3 (its probabilities are not rounded to f16 at all).
// Decode of a token and the same token's row in a prefill are compared bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "attention_setup.h"
#include "cuda_test_util.h"
#include "paged_cache_fixture.h"
#include "random_token_tree.h"
#include "util/error.h"

namespace lumen::backend::testing {
namespace {

using tensor::DType;

class CudaAttention : public ::testing::TestWithParam<AttnCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaAttention, MatchesCpu) {
  AttnSetup s(GetParam());
  const std::vector<float> expected = s.run_cpu();
  DeviceTensor dq = to_device(s.host_q());
  const double exact_tolerance = s.c.cache_type == DType::F16 ? 2e-4 : 2e-5;
  EXPECT_LE(max_relative_difference(expected, s.run_gpu(s.slices, dq)), exact_tolerance)
      << s.c.name;

  if (s.c.cache_type == DType::F16) {
    const CudaBackendOptions saved = gpu()->options();
    CudaBackendOptions flash = saved;
    flash.exact_f16_attention = false;
    gpu()->set_options(flash);
    EXPECT_LE(max_relative_difference(expected, s.run_gpu(s.slices, dq)), 3e-3)
        << s.c.name << " (flash)";
    gpu()->set_options(saved);
  }
}

// Each token alone (a decode step at its position) gives its row of the batched call bit for
// bit, in both modes.
TEST_P(CudaAttention, EachTokenAloneGivesItsBatchRowExactly) {
  AttnSetup s(GetParam(), 2);
  DeviceTensor dq = to_device(s.host_q());
  const CudaBackendOptions saved = gpu()->options();
  for (bool exact : {true, false}) {
    CudaBackendOptions options = saved;
    options.exact_f16_attention = exact;
    gpu()->set_options(options);
    const std::vector<float> batch = s.run_gpu(s.slices, dq);
    const int64_t row = s.c.n_heads * s.c.head_dim;
    for (const SequenceSlice& seq : s.slices) {
      for (int64_t i : {int64_t{0}, seq.n_tokens / 2, seq.n_tokens - 1}) {
        const SequenceSlice one{seq.first_token + i, 1, seq.start_pos + i, seq.block_table};
        const std::vector<float> alone = s.run_gpu(std::span<const SequenceSlice>(&one, 1), dq);
        const int64_t at_row = (seq.first_token + i) * row;
        const std::vector<float> a(alone.begin() + at_row, alone.begin() + at_row + row);
        const std::vector<float> b(batch.begin() + at_row, batch.begin() + at_row + row);
        EXPECT_EQ(a, b) << s.c.name << " token " << seq.first_token + i
                        << (exact ? " exact" : " flash");
      }
    }
  }
  gpu()->set_options(saved);
}

// A decode step laid out with decode tables (CudaBackendOptions::step_graphs: the plan-free
// decode attention of decode_attention.h, what a CUDA graph replays) gives the planned
// attention's results bit for bit, in both modes: each sequence decodes its last position.
TEST_P(CudaAttention, DecodeTablesGiveThePlannedResultsBitForBit) {
  AttnSetup s(GetParam(), 3);
  DeviceTensor dq = to_device(s.host_q());
  const AttnSetup::DecodeStep step_layout = s.decode_step();
  const std::vector<SequenceSlice>& decode = step_layout.slices;
  const int64_t row = s.c.n_heads * s.c.head_dim;
  const auto decoded_rows = [&](const std::vector<float>& out) {
    return std::vector<float>(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(decode.size()) * row);
  };
  const CudaBackendOptions saved = gpu()->options();
  for (bool exact : {true, false}) {
    CudaBackendOptions options = saved;
    options.exact_f16_attention = exact;
    options.step_graphs = false;
    gpu()->set_options(options);
    const std::vector<float> planned = decoded_rows(s.run_gpu(decode, dq));
    options.step_graphs = true;
    gpu()->set_options(options);
    gpu()->begin_step(step_layout.metadata());
    const std::vector<float> derived = decoded_rows(s.run_gpu(decode, dq));
    gpu()->end_step();
    EXPECT_EQ(derived, planned) << s.c.name << (exact ? " exact" : " flash");
  }
  gpu()->set_options(saved);
}

// With fused_input_quantization, attention quantizes its output for the output projection that
// reads it next (fused_input_quantization.h; Q8_0 and Q8_1 activations): the projection must give
// the same bits as with the option off, and must really have taken attention's blocks. Q8_K
// (K-quant weights) is not written by attention, and its projection quantizes as before.
TEST_P(CudaAttention, OutputQuantizedForTheProjectionGivesTheSameBits) {
  AttnSetup s(GetParam(), 4);
  // A decode step: each sequence's last position, at most the 8 rows the GEMV takes.
  std::vector<SequenceSlice> decode;
  for (size_t i = 0; i < s.slices.size() && decode.size() < 8; ++i) {
    const SequenceSlice& seq = s.slices[i];
    decode.push_back({static_cast<int64_t>(i), 1, seq.start_pos + seq.n_tokens - 1, seq.block_table});
  }
  const auto n = static_cast<int64_t>(decode.size());
  const int64_t head_dim = s.c.head_dim, cols = s.c.n_heads * head_dim, out_rows = 64;
  const TensorView host_q{DType::F32, {head_dim, s.c.n_heads, n, 1}, static_cast<size_t>(head_dim) * 4, s.q.data()};
  DeviceTensor dq = to_device(host_q);
  for (const DType w_type : {DType::Q4_0, DType::Q4_1, DType::Q4_K}) {
    if (cols % (w_type == DType::Q4_K ? 256 : 32) != 0) continue;
    const TensorView wo = upload_random_weights(w_type, cols, out_rows, 77);
    for (const bool exact : {true, false}) {
      const std::string what =
          std::string(s.c.name) + " " + std::string(tensor::dtype_name(w_type)) + (exact ? " exact" : " flash");
      std::vector<float> results[2];
      uint64_t taken = 0;
      for (const bool on : {false, true}) {
        ScopedCudaOptions option([&](CudaBackendOptions& o) {
          o.fused_input_quantization = on;
          o.exact_f16_attention = exact;
        });
        DeviceTensor out = device_matrix(head_dim, s.c.n_heads * n, head_dim);
        out.view.dims = {head_dim, s.c.n_heads, n, 1};
        const TensorView rows{DType::F32, {cols, n, 1, 1}, static_cast<size_t>(cols) * 4, out.view.data};
        DeviceTensor y = device_matrix(out_rows, n, out_rows);
        const uint64_t before = gpu()->prequantized_inputs();
        for (int step = 0; step < 2; ++step) {  // the first step teaches attention its consumer
          gpu()->attention(dq.view, s.device_layer, decode, s.config, out.view);
          gpu()->matmul(wo, rows, y.view);
        }
        taken = gpu()->prequantized_inputs() - before;
        results[on] = download_f32(y.view);
      }
      EXPECT_EQ(results[1], results[0]) << what;
      // The second step at least (the first too when an earlier case taught the same address).
      // Attention writes whole blocks per head, so a head_dim past a multiple of 32 (d80) leaves
      // the projection its own quantization.
      if (w_type == DType::Q4_K || head_dim % 32 != 0) {
        EXPECT_EQ(taken, 0u) << what;
      } else {
        EXPECT_GE(taken, 1u) << what;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaAttention,
    ::testing::Values(
        AttnCase{"decode_gqa4_f16",
                 DType::F16,
                 8,
                 2,
                 64,
                 16,
                 0,
                 0.0f,
                 {{37, 1}, {300, 1}, {0, 1}, {513, 1}}},
        AttnCase{"prefill_gqa3_f16", DType::F16, 6, 2, 64, 16, 0, 0.0f, {{0, 45}, {20, 30}}},
        AttnCase{"mixed_f32", DType::F32, 4, 4, 128, 16, 0, 0.0f, {{0, 17}, {255, 2}, {600, 1}}},
        AttnCase{
            "window_softcap_d256_f16", DType::F16, 8, 4, 256, 16, 40, 30.0f, {{0, 70}, {290, 3}}},
        AttnCase{"group16_f16", DType::F16, 16, 1, 64, 16, 0, 0.0f, {{100, 5}, {0, 2}}},
        AttnCase{"d80_block7_f32", DType::F32, 4, 2, 80, 7, 0, 0.0f, {{10, 12}, {0, 1}, {260, 9}}},
        AttnCase{"long_prefill_f16", DType::F16, 4, 1, 128, 16, 0, 0.0f, {{200, 340}}}),
    [](const ::testing::TestParamInfo<AttnCase>& case_info) {
      return std::string(case_info.param.name);
    });

// ---- Token trees (CudaBackendOptions::tree_attention) ----

class CudaTreeAttention : public ::testing::TestWithParam<AttnCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

// Each case's last sequence becomes a token tree over its rows (the others stay causal): the
// CUDA kernels against the CPU's, with the MatchesCpu tolerances, in both f16 modes.
TEST_P(CudaTreeAttention, MatchesCpu) {
  AttnSetup s(GetParam(), 4);
  SequenceSlice& last = s.slices.back();
  const lumen::testing::RandomTokenTree tree = lumen::testing::random_token_tree(last.n_tokens, last.start_pos, 11);
  last.visible = tree.visible;
  last.positions = tree.positions;
  const std::vector<float> expected = s.run_cpu();
  DeviceTensor dq = to_device(s.host_q());
  const CudaBackendOptions saved = gpu()->options();
  for (bool exact : {true, false}) {
    if (!exact && s.c.cache_type != DType::F16) continue;
    CudaBackendOptions options = saved;
    options.tree_attention = true;
    options.exact_f16_attention = exact;
    gpu()->set_options(options);
    const double tolerance = s.c.cache_type != DType::F16 ? 2e-5 : exact ? 2e-4 : 3e-3;
    EXPECT_LE(max_relative_difference(expected, s.run_gpu(s.slices, dq)), tolerance)
        << s.c.name << (exact ? " exact" : " flash");
  }
  gpu()->set_options(saved);
  // Without the option the backend refuses a tree, naming it (off here whatever
  // LUMEN_CUDA_TREE_ATTENTION gave the backend).
  ScopedCudaOptions off([](CudaBackendOptions& o) { o.tree_attention = false; });
  EXPECT_THROW(s.run_gpu(s.slices, dq), Error);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaTreeAttention,
    ::testing::Values(AttnCase{"tree_gqa4_f16", DType::F16, 8, 2, 64, 16, 0, 0.0f, {{37, 1}, {300, 12}}},
                      AttnCase{"tree_f32", DType::F32, 4, 4, 128, 16, 0, 0.0f, {{120, 9}}},
                      AttnCase{"tree_window_f16", DType::F16, 8, 4, 64, 16, 40, 0.0f, {{0, 20}, {290, 16}}},
                      AttnCase{"tree_group16_block7_f16", DType::F16, 16, 1, 64, 7, 0, 0.0f, {{63, 5}, {500, 24}}}),
    [](const ::testing::TestParamInfo<AttnCase>& case_info) { return std::string(case_info.param.name); });

// ---- The tensor-core prefill attention (CudaBackendOptions::tensor_core_prefill) ----

class CudaTensorCorePrefill : public ::testing::TestWithParam<AttnCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

// Sequences of 16 rows or more go through the tensor cores, shorter ones through the split-KV
// kernels, in one call: every row within 2e-3 of the CPU (probabilities rounded to f16 at another
// point than the CPU's; the CPU's emulation of the kernel's steps, tests/unit/cuda_host, measured
// 2.9e-4 to 4.0e-4), in both f16 modes; the short sequences' rows are the
// split-KV kernels' bit for bit; the long ones' differ from them (the option took them).
TEST_P(CudaTensorCorePrefill, LongSequencesMatchTheCpuAndShortOnesKeepTheirKernels) {
  AttnSetup s(GetParam(), 5);
  const std::vector<float> expected = s.run_cpu();
  DeviceTensor dq = to_device(s.host_q());
  const CudaBackendOptions saved = gpu()->options();
  const int64_t row = s.c.n_heads * s.c.head_dim;
  for (bool exact : {true, false}) {
    CudaBackendOptions options = saved;
    options.exact_f16_attention = exact;
    options.tensor_core_prefill = false;
    gpu()->set_options(options);
    const std::vector<float> split_kv = s.run_gpu(s.slices, dq);
    options.tensor_core_prefill = true;
    gpu()->set_options(options);
    const std::vector<float> tensor_cores = s.run_gpu(s.slices, dq);
    EXPECT_LE(max_relative_difference(expected, tensor_cores), 2e-3) << s.c.name << (exact ? " exact" : " flash");
    bool any_taken = false;
    for (const SequenceSlice& seq : s.slices) {
      const auto begin = static_cast<std::ptrdiff_t>(seq.first_token * row);
      const auto end = static_cast<std::ptrdiff_t>((seq.first_token + seq.n_tokens) * row);
      const std::vector<float> a(split_kv.begin() + begin, split_kv.begin() + end);
      const std::vector<float> b(tensor_cores.begin() + begin, tensor_cores.begin() + end);
      if (seq.n_tokens < 16) {
        EXPECT_EQ(a, b) << s.c.name << " short sequence at token " << seq.first_token;
      } else {
        any_taken = true;
        EXPECT_NE(a, b) << s.c.name << " sequence at token " << seq.first_token << " (not taken?)";
      }
    }
    EXPECT_TRUE(any_taken) << s.c.name;
  }
  gpu()->set_options(saved);
}

// A long sequence alone, or cut into two chunks of 16 rows or more (the second after the first's
// keys, as a chunked prefill runs), gives its rows of the whole call bit for bit.
TEST_P(CudaTensorCorePrefill, ARowsResultDoesNotDependOnItsChunkOrBatch) {
  AttnSetup s(GetParam(), 6);
  DeviceTensor dq = to_device(s.host_q());
  const CudaBackendOptions saved = gpu()->options();
  CudaBackendOptions options = saved;
  options.tensor_core_prefill = true;
  gpu()->set_options(options);
  const std::vector<float> whole = s.run_gpu(s.slices, dq);
  const int64_t row = s.c.n_heads * s.c.head_dim;
  for (const SequenceSlice& seq : s.slices) {
    if (seq.n_tokens < 16) continue;
    const int64_t cut = seq.n_tokens >= 32 ? seq.n_tokens / 2 : seq.n_tokens;
    std::vector<SequenceSlice> pieces = {{seq.first_token, cut, seq.start_pos, seq.block_table}};
    if (cut < seq.n_tokens) {
      pieces.push_back({seq.first_token + cut, seq.n_tokens - cut, seq.start_pos + cut, seq.block_table});
    }
    for (const SequenceSlice& piece : pieces) {
      const std::vector<float> alone = s.run_gpu(std::span<const SequenceSlice>(&piece, 1), dq);
      const auto begin = static_cast<std::ptrdiff_t>(piece.first_token * row);
      const auto end = static_cast<std::ptrdiff_t>((piece.first_token + piece.n_tokens) * row);
      EXPECT_EQ(std::vector<float>(alone.begin() + begin, alone.begin() + end),
                std::vector<float>(whole.begin() + begin, whole.begin() + end))
          << s.c.name << " rows from token " << piece.first_token;
    }
  }
  gpu()->set_options(saved);
}

INSTANTIATE_TEST_SUITE_P(
    Cases, CudaTensorCorePrefill,
    ::testing::Values(AttnCase{"prefill_gqa3_f16", DType::F16, 6, 2, 64, 16, 0, 0.0f, {{0, 45}, {20, 30}, {7, 3}}},
                      AttnCase{"mha_d64", DType::F16, 4, 4, 64, 16, 0, 0.0f, {{0, 200}}},
                      AttnCase{"gqa4_d128_chunk", DType::F16, 16, 4, 128, 16, 0, 0.0f, {{300, 64}, {0, 1}, {5, 33}}},
                      AttnCase{
                          "window_softcap_d256", DType::F16, 8, 4, 256, 16, 40, 30.0f, {{0, 70}, {290, 3}, {100, 50}}},
                      AttnCase{"group16_block7", DType::F16, 16, 1, 64, 7, 0, 0.0f, {{100, 20}, {0, 2}}},
                      AttnCase{"long_d128", DType::F16, 4, 1, 128, 16, 0, 0.0f, {{200, 340}}},
                      AttnCase{"gemma_window_d256", DType::F16, 4, 1, 256, 16, 512, 0.0f, {{600, 128}}}),
    [](const ::testing::TestParamInfo<AttnCase>& case_info) { return std::string(case_info.param.name); });

// ---- K/V cache writes and block moves ----

class CudaKvCache : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_CUDA(); }
};

TEST_P(CudaKvCache, StoreAndBlockMovesMatchCpuByteForByte) {
  const DType type = GetParam();
  const int64_t kv_dim = 96, block_size = 16, n_blocks = 9;
  PagedCache host(type, kv_dim, block_size, n_blocks);
  DeviceTensor dk = to_device(host.layer().k), dv = to_device(host.layer().v);
  KvLayer device = host.layer();
  device.k = dk.view;
  device.v = dv.view;

  // Two sequences in one batch: rows 0..4 continue one at position 30, rows 5..24 start another.
  const std::vector<int32_t> table_a = {6, 2}, table_b = {0, 8};
  const std::vector<SequenceSlice> seqs = {{0, 5, 27, table_a}, {5, 20, 0, table_b}};
  const int64_t n = 26;  // the last row belongs to no sequence
  std::vector<float> k(static_cast<size_t>(n * (kv_dim + 4))), v(k.size());
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-70000.0f, 70000.0f);  // f16 overflows too
  for (float& x : k) x = uniform(rng);
  for (float& x : v) x = uniform(rng) / 1000.0f;
  TensorView hk{DType::F32, {kv_dim, n, 1, 1}, static_cast<size_t>(kv_dim + 4) * 4, k.data()};
  TensorView hv{DType::F32, {kv_dim, n, 1, 1}, static_cast<size_t>(kv_dim + 4) * 4, v.data()};
  DeviceTensor dkin = to_device(hk), dvin = to_device(hv);
  cpu().store_kv(hk, hv, seqs, host.layer());
  gpu()->store_kv(dkin.view, dvin.view, seqs, device);
  const auto bytes_of = [](const TensorView& t) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    return std::vector<uint8_t>(p, p + t.row_bytes * static_cast<size_t>(t.rows()));
  };
  EXPECT_EQ(bytes_of(host.layer().k), download_bytes(device.k)) << "store_kv K";
  EXPECT_EQ(bytes_of(host.layer().v), download_bytes(device.v)) << "store_kv V";

  cpu().copy_kv_block(host.layer(), 6, 4);
  gpu()->copy_kv_block(device, 6, 4);
  const size_t block_bytes = kv_block_bytes(host.layer());
  std::vector<uint8_t> swap_k(block_bytes), swap_v(block_bytes);
  cpu().read_kv_block(host.layer(), 0, swap_k.data(), swap_v.data());
  std::vector<uint8_t> got_k(block_bytes), got_v(block_bytes);
  gpu()->read_kv_block(device, 0, got_k.data(), got_v.data());
  EXPECT_EQ(swap_k, got_k) << "read_kv_block K";
  EXPECT_EQ(swap_v, got_v) << "read_kv_block V";
  cpu().write_kv_block(host.layer(), 7, swap_k.data(), swap_v.data());
  gpu()->write_kv_block(device, 7, swap_k.data(), swap_v.data());
  EXPECT_EQ(bytes_of(host.layer().k), download_bytes(device.k)) << "after block moves, K";
  EXPECT_EQ(bytes_of(host.layer().v), download_bytes(device.v)) << "after block moves, V";
  EXPECT_THROW(gpu()->copy_kv_block(device, 0, n_blocks), Error);

  // A token tree's accepted row moved into place (copy_kv_row, with tree attention declared).
  const CudaBackendOptions saved = gpu()->options();
  CudaBackendOptions trees = saved;
  trees.tree_attention = true;
  gpu()->set_options(trees);
  cpu().copy_kv_row(host.layer(), 5 * block_size + 3, 7 * block_size + 15);
  gpu()->copy_kv_row(device, 5 * block_size + 3, 7 * block_size + 15);
  gpu()->set_options(saved);
  EXPECT_EQ(bytes_of(host.layer().k), download_bytes(device.k)) << "after copy_kv_row, K";
  EXPECT_EQ(bytes_of(host.layer().v), download_bytes(device.v)) << "after copy_kv_row, V";
}

INSTANTIATE_TEST_SUITE_P(Types, CudaKvCache, ::testing::Values(DType::F16, DType::F32));

}  // namespace
}  // namespace lumen::backend::testing
