// rope_store_kv, a declared op: a layer's rope of Q and K and its K/V store in one call must be
// bit for bit the backend's own rope, rope and store_kv (the transformer's path on a backend
// without the op), for every cache type the backend stores, with the rope modes that change
// which pairs rotate. The plain ops have their own rows against scalar references (check_rope.cc,
// check_kv.cc), so equality with them carries those references over.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "backend/common/op_checks.h"
#include "backend/cpu/cpu_backend.h"
#include "kv_cache.h"
#include "registered_ops.h"
#include "tensor_io.h"
#include "util/error.h"

namespace lumen::backend::conformance {
namespace {

using tensor::DType;

// Row: {head_dim, query heads, KV heads}; mode 0 normal pairs, 1 NeoX, 2 NeoX over the first
// quarter of each head with per-pair frequency factors (llama 3's rope_freqs).
RopeConfig config_for(int mode, int64_t head_dim, std::vector<float>& freq_factors) {
  RopeConfig config;
  config.rope_dims = head_dim;
  config.neox = mode != 0;
  if (mode == 2) {
    config.rope_dims = head_dim / 4;
    config.freq_base = 500000.0;
    freq_factors = random_values(static_cast<size_t>(head_dim / 8), 91, 1.0f, 8.0f);
    config.freq_factors = freq_factors.data();
  }
  return config;
}

void check_rope_store_kv(Backend& backend, const RegisteredRow& row) {
  const auto [head_dim, q_heads, kv_heads] = row.shape;
  std::vector<float> freq_factors;
  const RopeConfig config = config_for(row.mode, head_dim, freq_factors);
  const int64_t block_size = 16, n_blocks = 4, tokens = 9, kv_dim = head_dim * kv_heads;
  // A prefill from position 0 and a chunk that crosses a block boundary, tables out of order.
  const std::vector<int32_t> table_a = {3, 1}, table_b = {0, 2};
  const SequenceSlice seqs[] = {{0, 5, 0, table_a}, {5, 4, block_size - 2, table_b}};
  std::vector<int32_t> positions;
  for (const SequenceSlice& s : seqs) {
    for (int64_t i = 0; i < s.n_tokens; ++i) positions.push_back(static_cast<int32_t>(s.start_pos + i));
  }
  const std::vector<float> q = random_values(static_cast<size_t>(head_dim * q_heads * tokens), 92, -3.0f, 3.0f);
  const std::vector<float> k = random_values(static_cast<size_t>(kv_dim * tokens), 93, -3.0f, 3.0f);
  const std::vector<float> v = random_values(static_cast<size_t>(kv_dim * tokens), 94, -3.0f, 3.0f);
  const std::array<int64_t, 4> q_dims = {head_dim, q_heads, tokens, 1}, k_dims = {head_dim, kv_heads, tokens, 1};
  int stored_types = 0;
  for (const DType type : {DType::F16, DType::F32, DType::BF16, DType::Q8_0, DType::Q4_0, DType::FP8_E4M3}) {
    if (!backend.supports_kv_type(type)) continue;
    ++stored_types;
    const std::string what = std::string(tensor::dtype_name(type)) + " cache";
    BackendTensor fq = upload_f32(backend, q_dims, q), fk = upload_f32(backend, k_dims, k);
    const BackendTensor fv = upload_f32(backend, {kv_dim, tokens, 1, 1}, v);
    BackendCache fused = make_cache(backend, type, kv_dim, block_size, n_blocks);
    backend.rope_store_kv(fq.view, fk.view, fv.view, positions, config, seqs, fused.layer);

    BackendTensor pq = upload_f32(backend, q_dims, q), pk = upload_f32(backend, k_dims, k);
    const BackendTensor pv = upload_f32(backend, {kv_dim, tokens, 1, 1}, v);
    BackendCache plain = make_cache(backend, type, kv_dim, block_size, n_blocks);
    backend.rope(pq.view, positions, config);
    backend.rope(pk.view, positions, config);
    backend.store_kv(common::token_rows(pk.view), pv.view, seqs, plain.layer);

    const std::vector<float> rotated_q = download(backend, fq.view);
    EXPECT_EQ(rotated_q, download(backend, pq.view)) << what << ": q differs from rope's";
    EXPECT_EQ(download(backend, fk.view), download(backend, pk.view)) << what << ": k differs from rope's";
    EXPECT_TRUE(read_cache(backend, fused) == read_cache(backend, plain))
        << what << ": the cache differs from store_kv's";
    EXPECT_EQ(download(backend, fv.view), v) << what << ": v changed";
    EXPECT_NE(rotated_q, q) << what << ": nothing rotated";  // positions 1.. rotate every pair
  }
  EXPECT_GT(stored_types, 0);
}

// Llama's heads (64, 4 queries per KV head), a NeoX model's 128, and a partial rotation with
// frequency factors; an odd head count for the tails of the kernels' loops.
const bool kRegistered = register_op(
    {OpKind::RopeStoreKv, {{{64, 8, 2}, 0}, {{128, 4, 4}, 1}, {{64, 6, 3}, 2}, {{32, 3, 1}, 0}}, check_rope_store_kv});

// Bad input is refused before anything is written: q and k overlapping, k's heads apart, a
// position count that is not the token count, heads of two sizes; and a backend without the op
// refuses the call.
TEST(RopeStoreKv, RefusesBadInputAndBackendsWithoutIt) {
  constexpr int64_t kHeadDim = 8, kHeads = 2, kTokens = 3, kKvDim = kHeadDim * kHeads;
  std::vector<float> q(kKvDim * kTokens * 2, 1.0f), k(kKvDim * kTokens * 2, 2.0f), v(kKvDim * kTokens, 3.0f);
  const std::vector<float> q_before = q, k_before = k;
  const auto heads = [](float* data, size_t row_bytes) {
    return TensorView{DType::F32, {kHeadDim, kHeads, kTokens, 1}, row_bytes, data};
  };
  TensorView qv = heads(q.data(), kHeadDim * 4), kv = heads(k.data(), kHeadDim * 4);
  const TensorView vv = f32_matrix(v.data(), kKvDim, kTokens);
  CpuBackend cpu(2);
  BackendCache cache = make_cache(cpu, DType::F32, kKvDim, 16, 2);
  const std::vector<uint8_t> cache_before = read_cache(cpu, cache);
  const std::vector<int32_t> table = {1};
  const SequenceSlice seqs[] = {{0, kTokens, 0, table}};
  const std::vector<int32_t> positions = {0, 1, 2}, too_few = {0, 1};
  RopeConfig config;
  config.rope_dims = kHeadDim;
  auto refused = [&](Backend& backend, TensorView& qt, TensorView& kt, std::span<const int32_t> pos, const char* why) {
    try {
      backend.rope_store_kv(qt, kt, vv, pos, config, seqs, cache.layer);
      ADD_FAILURE() << why << ": accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
    EXPECT_EQ(q, q_before) << why;
    EXPECT_EQ(k, k_before) << why;
    EXPECT_TRUE(read_cache(cpu, cache) == cache_before) << why;
  };
  TensorView overlapping = heads(q.data() + kHeadDim, kHeadDim * 4);
  refused(cpu, qv, overlapping, positions, "q, k and v may not overlap");
  TensorView spaced = heads(k.data(), kHeadDim * 4 * 2);
  refused(cpu, qv, spaced, positions, "k's heads must be contiguous");
  refused(cpu, qv, kv, too_few, "2 positions for 3 tokens");
  TensorView wide_q{DType::F32, {2 * kHeadDim, kHeads, kTokens, 1}, 2 * kHeadDim * 4, q.data()};
  refused(cpu, wide_q, kv, positions, "q's heads have 16 values, k's 8");

  cpu.set_composed_ops(true);
  refused(cpu, qv, kv, positions, "rope_store_kv");
  cpu.set_composed_ops(false);
  cpu.rope_store_kv(qv, kv, vv, positions, config, seqs, cache.layer);  // accepted again
  EXPECT_FALSE(read_cache(cpu, cache) == cache_before);
}

}  // namespace
}  // namespace lumen::backend::conformance
