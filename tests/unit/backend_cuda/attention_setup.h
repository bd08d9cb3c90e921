#pragma once
// The CUDA attention tests' setup (attention_test.cc, attention_sinks_test.cc): a paged cache of
// random K/V on the host and its device copy, shuffled block tables, random queries, and the
// CPU's and the GPU's attention over them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <ostream>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include "cuda_test_util.h"
#include "paged_cache_fixture.h"

namespace lumen::backend::testing {

struct SeqSpec {
  int64_t start_pos, n_tokens;
};

struct AttnCase {
  const char* name;
  tensor::DType cache_type;
  int64_t n_heads, n_kv_heads, head_dim, block_size, window;
  float softcap;
  std::vector<SeqSpec> seqs;
};

inline void PrintTo(const AttnCase& c, std::ostream* os) { *os << c.name; }

// A paged cache filled with random K/V for every position the sequences reach, its device
// copy, the block tables (a shuffled partition of the blocks) and random queries.
struct AttnSetup {
  AttnCase c;
  int64_t kv_dim, n_blocks, n_tokens = 0;
  std::vector<std::vector<int32_t>> tables;
  std::unique_ptr<PagedCache> host;
  DeviceTensor device_k, device_v;
  KvLayer device_layer;
  std::vector<float> q;
  std::vector<SequenceSlice> slices;
  AttentionConfig config;

  explicit AttnSetup(const AttnCase& cs, uint32_t seed = 1) : c(cs) {
    kv_dim = c.head_dim * c.n_kv_heads;
    n_blocks = 3;  // spares that no sequence uses
    for (const SeqSpec& s : c.seqs) n_blocks += (s.start_pos + s.n_tokens + c.block_size - 1) / c.block_size;
    std::vector<int32_t> ids(static_cast<size_t>(n_blocks));
    std::iota(ids.begin(), ids.end(), 0);
    std::mt19937 rng(seed);
    std::shuffle(ids.begin(), ids.end(), rng);
    host = std::make_unique<PagedCache>(c.cache_type, kv_dim, c.block_size, n_blocks);
    std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
    size_t next = 0;
    for (const SeqSpec& s : c.seqs) {
      const int64_t blocks = (s.start_pos + s.n_tokens + c.block_size - 1) / c.block_size;
      tables.emplace_back(ids.begin() + static_cast<std::ptrdiff_t>(next),
                          ids.begin() + static_cast<std::ptrdiff_t>(next + static_cast<size_t>(blocks)));
      next += static_cast<size_t>(blocks);
      std::vector<float> k(static_cast<size_t>(kv_dim)), v(k.size());
      for (int64_t pos = 0; pos < s.start_pos + s.n_tokens; ++pos) {
        for (float& x : k) x = uniform(rng);
        for (float& x : v) x = uniform(rng);
        host->write(PagedCache::row_of(tables.back(), pos, c.block_size), k.data(), v.data());
      }
    }
    device_k = to_device(host->layer().k);
    device_v = to_device(host->layer().v);
    device_layer = host->layer();
    device_layer.k = device_k.view;
    device_layer.v = device_v.view;
    for (size_t i = 0; i < c.seqs.size(); ++i) {
      slices.push_back({n_tokens, c.seqs[i].n_tokens, c.seqs[i].start_pos, tables[i]});
      n_tokens += c.seqs[i].n_tokens;
    }
    q.resize(static_cast<size_t>(n_tokens * c.n_heads * c.head_dim));
    std::uniform_real_distribution<float> wide(-2.5f, 2.5f);  // some peaked rows
    for (float& x : q) x = wide(rng);
    config.n_heads = c.n_heads;
    config.n_kv_heads = c.n_kv_heads;
    config.head_dim = c.head_dim;
    config.scale = 1.0f / std::sqrt(static_cast<float>(c.head_dim));
    config.sliding_window = c.window;
    config.softcap = c.softcap;
  }

  TensorView host_q() {
    return {tensor::DType::F32, {c.head_dim, c.n_heads, n_tokens, 1}, static_cast<size_t>(c.head_dim) * 4, q.data()};
  }

  // Attention sinks, one logit per query head (set_sinks; empty: none): the CPU reads them from
  // host memory, the GPU from a device copy, as a model uploads them with its weights.
  std::vector<float> sinks;
  DeviceTensor device_sinks;

  // Each sequence decoding its last position, as a decode step lays it out: its slices, and the
  // step's metadata over them for begin_step (valid while this DecodeStep lives).
  struct DecodeStep {
    std::vector<SequenceSlice> slices;
    std::vector<int32_t> tokens, positions;
    int64_t block_size = 0;
    StepMetadata metadata() const {
      StepMetadata step;
      step.tokens = tokens;
      step.positions = positions;
      step.sequences = slices;
      step.block_size = block_size;
      return step;
    }
  };
  DecodeStep decode_step() const {
    DecodeStep d;
    d.block_size = c.block_size;
    for (size_t i = 0; i < slices.size(); ++i) {
      const SequenceSlice& seq = slices[i];
      d.slices.push_back({static_cast<int64_t>(i), 1, seq.start_pos + seq.n_tokens - 1, seq.block_table});
      d.tokens.push_back(0);
      d.positions.push_back(static_cast<int32_t>(seq.start_pos + seq.n_tokens - 1));
    }
    return d;
  }

  void set_sinks(std::vector<float> values) {
    sinks = std::move(values);
    device_sinks = to_device(TensorView{
        tensor::DType::F32, {static_cast<int64_t>(sinks.size()), 1, 1, 1}, sinks.size() * sizeof(float), sinks.data()});
  }

  std::vector<float> run_cpu() {
    std::vector<float> out(q.size(), 0.0f);
    TensorView o{
        tensor::DType::F32, {c.head_dim, c.n_heads, n_tokens, 1}, static_cast<size_t>(c.head_dim) * 4, out.data()};
    AttentionConfig with = config;
    with.sinks = sinks.empty() ? nullptr : sinks.data();
    cpu().attention(host_q(), host->layer(), slices, with, o);
    return out;
  }

  // The GPU's attention over `seqs`, with the sinks set (unless without_sinks).
  std::vector<float> run_gpu(std::span<const SequenceSlice> seqs, const DeviceTensor& dq, bool without_sinks = false) {
    DeviceTensor out = device_matrix(c.head_dim, c.n_heads * n_tokens, c.head_dim);
    out.view.dims = {c.head_dim, c.n_heads, n_tokens, 1};
    AttentionConfig with = config;
    with.sinks = sinks.empty() || without_sinks ? nullptr : static_cast<const float*>(device_sinks.view.data);
    gpu()->attention(dq.view, device_layer, seqs, with, out.view);
    return download_f32(out.view);
  }
};

}  // namespace lumen::backend::testing
