#pragma once
// The tensor-core prefill attention's test cases, shared by its lane emulation
// (tensor_core_prefill_test.cc) and its kernel on the simulated device (tests/unit/cuda_sim): a
// paged f16 cache whose blocks are shuffled, queries, and the CPU backend's attention over them.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <ostream>
#include <random>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "tensor/fp16.h"

namespace lumen::backend::cuda::tc_prefill {

using tensor::DType;

// A paged f16 cache with rows padded to a 16-byte multiple, and the blocks of each sequence
// shuffled.
struct Cache {
  int64_t kv_dim, block_size, n_blocks;
  size_t row_bytes;
  std::vector<uint16_t> k, v;
  KvLayer layer() {
    KvLayer l;
    l.block_size = block_size;
    l.k = TensorView{DType::F16, {kv_dim, block_size, n_blocks, 1}, row_bytes, k.data()};
    l.v = TensorView{DType::F16, {kv_dim, block_size, n_blocks, 1}, row_bytes, v.data()};
    return l;
  }
};

struct Case {
  int64_t n_heads, n_kv_heads, head_dim, window;
  float softcap;
  std::vector<std::pair<int64_t, int64_t>> seqs;  // (start_pos, n_tokens)
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.n_heads << " heads / " << c.n_kv_heads << " KV heads of " << c.head_dim << ", window " << c.window
      << ", softcap " << c.softcap << ", " << c.seqs.size() << " sequences";
}

struct PrefillSetup {
  Case c;
  Cache cache;
  std::vector<std::vector<int32_t>> tables;
  std::vector<SequenceSlice> slices;
  std::vector<float> q;
  int64_t n_tokens = 0;
  AttentionConfig config;

  explicit PrefillSetup(const Case& cs) : c(cs) {
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f), wide(-2.5f, 2.5f);
    cache.kv_dim = c.n_kv_heads * c.head_dim;
    cache.block_size = 16;
    cache.n_blocks = 2;
    for (const auto& [start, n] : c.seqs) cache.n_blocks += (start + n + 15) / 16;
    cache.row_bytes = static_cast<size_t>(cache.kv_dim) * 2 + 32;
    const size_t row_values = cache.row_bytes / 2, rows = static_cast<size_t>(cache.n_blocks * 16);
    cache.k.assign(row_values * rows, 0x7e00);  // NaN where no sequence wrote
    cache.v.assign(row_values * rows, 0x7e00);
    std::vector<int32_t> ids(static_cast<size_t>(cache.n_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::shuffle(ids.begin(), ids.end(), rng);
    size_t next = 0;
    for (const auto& [start, n] : c.seqs) {
      const auto blocks = static_cast<size_t>((start + n + 15) / 16);
      tables.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(next),
                          ids.begin() + static_cast<std::ptrdiff_t>(next + blocks));
      next += blocks;
      for (int64_t pos = 0; pos < start + n; ++pos) {
        const auto row = static_cast<size_t>(tables.back()[static_cast<size_t>(pos / 16)] * 16 + pos % 16);
        for (size_t d = 0; d < static_cast<size_t>(cache.kv_dim); ++d) {
          cache.k[row * row_values + d] = tensor::float_to_fp16(uniform(rng));
          cache.v[row * row_values + d] = tensor::float_to_fp16(uniform(rng));
        }
      }
    }
    for (size_t i = 0; i < c.seqs.size(); ++i) {
      slices.push_back({n_tokens, c.seqs[i].second, c.seqs[i].first, tables[i]});
      n_tokens += c.seqs[i].second;
    }
    q.resize(static_cast<size_t>(n_tokens * c.n_heads * c.head_dim));
    for (float& x : q) x = wide(rng);
    config.n_heads = c.n_heads;
    config.n_kv_heads = c.n_kv_heads;
    config.head_dim = c.head_dim;
    config.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    config.sliding_window = c.window;
    config.softcap = c.softcap;
  }

  std::vector<float> cpu_attention() {
    static CpuBackend cpu(1);
    std::vector<float> out(q.size(), 0.0f);
    const size_t row = static_cast<size_t>(c.head_dim) * 4;
    TensorView qv{DType::F32, {c.head_dim, c.n_heads, n_tokens, 1}, row, q.data()};
    TensorView ov{DType::F32, {c.head_dim, c.n_heads, n_tokens, 1}, row, out.data()};
    cpu.attention(qv, cache.layer(), slices, config, ov);
    return out;
  }
};

// The shapes both tests run.
inline std::vector<Case> prefill_cases() {
  return {Case{4, 4, 64, 0, 0.0f, {{0, 40}}},                // one row per vector group, MHA
          Case{6, 2, 64, 0, 0.0f, {{0, 45}, {20, 30}}},      // GQA 3: vectors straddle rows
          Case{8, 2, 128, 0, 0.0f, {{100, 37}, {0, 16}}},    // a chunk after 100 cached keys
          Case{8, 4, 256, 40, 30.0f, {{0, 70}, {290, 17}}},  // window + softcap, two warps a row group
          Case{16, 1, 64, 0, 0.0f, {{5, 20}}},               // group 16: 4 rows a task
          Case{4, 1, 128, 24, 0.0f, {{0, 130}}},             // window inside the tiles
          Case{6, 3, 80, 0, 0.0f, {{0, 50}, {64, 20}}}};     // Qwen2-VL's heads of 80
}

}  // namespace lumen::backend::cuda::tc_prefill
