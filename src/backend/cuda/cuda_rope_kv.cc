// CudaBackend's RoPE and K/V store: rope, store_kv, and both in one launch (rope_store_kv,
// declared with CudaBackendOptions::fused_rope_store_kv). The three share how a call's rope
// parameters, positions and cache rows reach the device, so the fused launch reads exactly what
// the separate ones would.
#include <cmath>
#include <vector>

#include "backend/common/kv_checks.h"
#include "backend/common/op_checks.h"
#include "backend/common/rope_params.h"
#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/kernels.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

// The kernels' rope parameters for heads of head_dim values: the same f32 expressions as the
// CPU backend's rope_cache, evaluated here once.
cuda::RopeKernelParams rope_kernel_params(CudaBackend::State& s, const RopeConfig& config, int64_t head_dim) {
  const common::RopeParams params = common::make_rope_params(config, head_dim);
  cuda::RopeKernelParams k;
  k.rope_dims = params.rope_dims;
  k.neox = params.neox;
  k.theta_scale = std::pow(params.freq_base, -2.0f / static_cast<float>(params.rope_dims));
  k.freq_scale = params.freq_scale;
  k.ext_factor = params.ext_factor;
  k.mscale = params.attn_factor;
  if (params.ext_factor != 0.0f) k.mscale *= 1.0f + 0.1f * std::log(1.0f / params.freq_scale);
  k.corr_low = params.corr_dims[0];
  k.corr_high = params.corr_dims[1];
  k.loads_first = s.options.rope_loads_first;
  if (config.freq_factors != nullptr) {
    // The model passes the rope_freqs weight (device memory here); tests may pass host memory.
    k.freq_factors =
        s.is_device(config.freq_factors)
            ? config.freq_factors
            : static_cast<const float*>(s.uploads->upload(cuda::HostUploads::kFreqFactors, config.freq_factors,
                                                          static_cast<size_t>(params.rope_dims / 2) * sizeof(float)));
  }
  return k;
}

// The positions on the device: inside a step, where the step's metadata put them
// (step_uploads.h); else uploaded.
const int32_t* device_positions(CudaBackend::State& s, std::span<const int32_t> positions) {
  const int32_t* device = s.step->device_indices(positions);
  if (device != nullptr) return device;
  return static_cast<const int32_t*>(
      s.uploads->upload(cuda::HostUploads::kPositions, positions.data(), positions.size_bytes()));
}

// Token t's cache row for n_tokens tokens (-1 for a row no sequence owns): inside a step, the
// slot mapping that came with the step's metadata; else computed and uploaded.
const int64_t* device_kv_rows(CudaBackend::State& s, std::span<const SequenceSlice> seqs, const KvLayer& cache,
                              int64_t n_tokens) {
  const int64_t* rows = s.step->slot_mapping(seqs, cache.block_size, n_tokens);
  if (rows != nullptr) return rows;
  std::vector<int64_t> dest(static_cast<size_t>(n_tokens), -1);
  for (const SequenceSlice& seq : seqs) {
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      dest[static_cast<size_t>(seq.first_token + i)] = common::kv_row(seq, seq.start_pos + i, cache.block_size);
    }
  }
  return static_cast<const int64_t*>(
      s.uploads->upload(cuda::HostUploads::kKvRows, dest.data(), dest.size() * sizeof(int64_t)));
}

// Throws unless every tensor store_kv touches is in device memory (a latent cache's values are
// its keys: v and the value half are not read).
void require_kv_on_device(const CudaBackend::State& s, const TensorView& k, const TensorView& v, const KvLayer& cache,
                          std::string_view op) {
  const bool latent = values_in_keys(cache);
  cuda::require_device(s, k, op, "k");
  cuda::require_device(s, cache.k, op, "the key cache");
  if (!latent) {
    cuda::require_device(s, v, op, "v");
    cuda::require_device(s, cache.v, op, "the value cache");
  }
}

}  // namespace

void CudaBackend::do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) {
  State& s = *state_;
  cuda::require_device(s, x, "rope", "x");
  const int64_t heads = x.dims[1];
  const int64_t tokens = x.dims[2] * x.dims[3];
  if (tokens == 0) return;
  const cuda::RopeKernelParams k = rope_kernel_params(s, config, x.dims[0]);
  cuda::launch_rope(static_cast<float*>(x.data), cuda::stride_of(x), heads, tokens, device_positions(s, positions), k,
                    s.stream);
  s.check_launch("rope");
}

void CudaBackend::do_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                              KvLayer& cache) {
  State& s = *state_;
  const int64_t kv_dim = k.dims[0];
  // A latent cache (values a view of its keys) stores the keys' rows only; v is ignored.
  const bool latent = values_in_keys(cache);
  require_kv_on_device(s, k, v, cache, "store_kv");
  // Inside a step the slot mapping came with the step's metadata (step_uploads.h).
  if (k.rows() == 0) return;
  const int64_t* rows = device_kv_rows(s, seqs, cache, k.rows());
  cuda::launch_store_kv(static_cast<const float*>(k.data), cuda::stride_of(k),
                        latent ? nullptr : static_cast<const float*>(v.data), latent ? 0 : cuda::stride_of(v), kv_dim,
                        k.rows(), rows, cache.k.data, cache.k.row_bytes, cache.k.type, latent ? nullptr : cache.v.data,
                        cache.v.row_bytes, cache.v.type, s.stream);
  s.check_launch("store_kv");
}

void CudaBackend::do_rope_store_kv(TensorView& q, TensorView& k, const TensorView& v,
                                   std::span<const int32_t> positions, const RopeConfig& config,
                                   std::span<const SequenceSlice> seqs, KvLayer& cache) {
  State& s = *state_;
  cuda::require_device(s, q, "rope_store_kv", "q");
  require_kv_on_device(s, k, v, cache, "rope_store_kv");
  const int64_t tokens = k.dims[2] * k.dims[3];
  if (tokens == 0) return;
  const bool latent = values_in_keys(cache);
  cuda::RopeStoreKvArgs a;
  a.q = static_cast<float*>(q.data);
  a.head_stride_q = cuda::stride_of(q);
  a.q_heads = q.dims[1];
  a.k = static_cast<float*>(k.data);
  a.head_stride_k = cuda::stride_of(k);
  a.kv_heads = k.dims[1];
  a.v = latent ? nullptr : static_cast<const float*>(v.data);
  a.v_stride = latent ? 0 : cuda::stride_of(v);
  a.positions = device_positions(s, positions);
  a.rope = rope_kernel_params(s, config, k.dims[0]);
  a.dest_rows = device_kv_rows(s, seqs, cache, tokens);
  a.k_cache = static_cast<uint8_t*>(cache.k.data);
  a.k_row_bytes = cache.k.row_bytes;
  a.k_type = cache.k.type;
  a.v_cache = latent ? nullptr : static_cast<uint8_t*>(cache.v.data);
  a.v_row_bytes = cache.v.row_bytes;
  a.v_type = cache.v.type;
  cuda::launch_rope_store_kv(a, tokens, s.stream);
  s.check_launch("rope_store_kv");
}

}  // namespace lumen::backend
