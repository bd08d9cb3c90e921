// The CUDA backend's importance-based KV eviction (Backend::attention_scores, gather_kv_rows): the
// arguments were checked in front of every backend (common/kv_eviction_checks.h); here the
// device memory, one upload of the tables, and the launches of kv_eviction.cu. attention_scores
// adds into a host table: its device sums come back in one copy at the end of the call.
#include <algorithm>
#include <cstring>
#include <vector>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/op_hold.h"
#include "backend/cuda/kv_eviction_kernels.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

// Scored rows per launch: their probabilities (rows x heads x slots floats) stay within this.
constexpr int64_t kProbabilityBudgetFloats = int64_t{32} << 20;  // 128 MiB

// The int32 arrays, one after another on the device (valid for work queued after this).
const int32_t* upload_ints(CudaBackend::State& s, const std::vector<int32_t>& values) {
  return static_cast<const int32_t*>(
      s.uploads->upload(cuda::HostUploads::kKvEviction, values.data(), values.size() * sizeof(int32_t)));
}

}  // namespace

void CudaBackend::do_attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq,
                                      int64_t first_row, const AttentionConfig& config, float* scores,
                                      int64_t slot_stride) {
  State& s = *state_;
  cuda::refuse_in_capture("attention_scores");
  cuda::require_device(s, q, "attention_scores", "q");
  cuda::require_device(s, cache.k, "attention_scores", "the key cache");
  const int64_t n_slots = seq.start_pos + seq.n_tokens, n_rows = seq.n_tokens - first_row;
  if (n_rows == 0 || n_slots == 0) return;
  const int64_t blocks = (n_slots + cache.block_size - 1) / cache.block_size;
  const int32_t* table =
      upload_ints(s, std::vector<int32_t>(seq.block_table.begin(), seq.block_table.begin() + blocks));

  cuda::KvScoreArgs args;
  args.q = static_cast<const float*>(q.data);
  args.q_stride = cuda::stride_of(q);
  args.n_heads = config.n_heads;
  args.n_kv_heads = config.n_kv_heads;
  args.head_dim = config.head_dim;
  args.k = static_cast<const uint8_t*>(cache.k.data);
  args.k_row_bytes = cache.k.row_bytes;
  args.k_f16 = cache.k.type == tensor::DType::F16;
  args.block_table = table;
  args.block_size = cache.block_size;
  args.first_token = seq.first_token;
  args.start_pos = seq.start_pos;
  args.window = config.sliding_window;
  args.scale = config.scale;
  args.softcap = config.softcap;

  const int64_t per_row = config.n_heads * n_slots;
  const int64_t chunk = std::clamp<int64_t>(kProbabilityBudgetFloats / per_row, 1, n_rows);
  auto* probs = static_cast<float*>(s.kv_scores.ensure(static_cast<size_t>(chunk * per_row) * sizeof(float), s.stream));
  const size_t table_bytes = static_cast<size_t>(n_slots * config.n_kv_heads) * sizeof(float);
  auto* sums = static_cast<float*>(s.kv_score_sums.ensure(table_bytes, s.stream));
  cuda::check_cuda(cudaMemsetAsync(sums, 0, table_bytes, s.stream), "cudaMemsetAsync");
  for (int64_t r0 = first_row; r0 < seq.n_tokens; r0 += chunk) {
    const int64_t rows = std::min(chunk, seq.n_tokens - r0);
    cuda::launch_kv_score_rows(args, r0, rows, n_slots, probs, s.stream);
    cuda::launch_kv_score_sum(probs, rows, config.n_heads, config.n_kv_heads, n_slots, sums, s.stream);
  }
  s.check_launch("attention_scores");
  std::vector<float> host(static_cast<size_t>(n_slots * config.n_kv_heads));
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  cuda::check_cuda(cudaMemcpyAsync(host.data(), sums, table_bytes, cudaMemcpyDeviceToHost, s.stream),
                   "cudaMemcpyAsync");
  synchronize();
  for (int64_t slot = 0; slot < n_slots; ++slot) {
    for (int64_t h = 0; h < config.n_kv_heads; ++h) {
      scores[slot * slot_stride + h] += host[static_cast<size_t>(slot * config.n_kv_heads + h)];
    }
  }
}

void CudaBackend::do_gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table,
                                    std::span<const int32_t> dst_table, std::span<const int32_t> keep, int64_t head_dim,
                                    int64_t value_dim) {
  State& s = *state_;
  cuda::refuse_in_capture("gather_kv_rows");
  if (keep.empty()) return;
  const int64_t n_kv_heads = cache.k.dims[0] / head_dim;
  const int64_t n_keep = static_cast<int64_t>(keep.size()) / n_kv_heads;
  // The three arrays in one upload: src_table, dst_table, keep.
  std::vector<int32_t> ints(src_table.begin(), src_table.end());
  ints.insert(ints.end(), dst_table.begin(), dst_table.end());
  ints.insert(ints.end(), keep.begin(), keep.end());
  const int32_t* device = upload_ints(s, ints);
  for (const auto& [t, dim] : {std::pair{&cache.k, head_dim}, std::pair{&cache.v, value_dim}}) {
    cuda::require_device(s, *t, "gather_kv_rows", "cache");
    cuda::KvGatherArgs args;
    args.src_table = device;
    args.dst_table = device + src_table.size();
    args.keep = device + src_table.size() + dst_table.size();
    args.n_keep = n_keep;
    args.block_size = cache.block_size;
    args.row_bytes = t->row_bytes;
    args.slice_bytes = kv_slice_bytes(t->type, dim);
    auto* kept = static_cast<uint8_t*>(s.kv_gathered.ensure(keep.size() * args.slice_bytes, s.stream));
    cuda::launch_kv_gather(args, static_cast<int64_t>(keep.size()), static_cast<uint8_t*>(t->data), kept, s.stream);
  }
  s.check_launch("gather_kv_rows");
}

}  // namespace lumen::backend
