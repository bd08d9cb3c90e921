// CudaBackend's LayerNorm-block ops and an encoder's attention (encoder_ops.cu, or with
// encoder_tensor_cores tensor_core_prefill.cu). Declared only with CudaBackendOptions::layer_norm
// and ::encoder (the common layer refuses them otherwise).
#include <vector>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/encoder_kernels.h"
#include "backend/cuda/encoder_math.h"
#include "backend/cuda/tensor_core_prefill.h"
#include "backend/cuda/tensor_core_prefill_plan.h"

namespace lumen::backend {

void CudaBackend::do_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                                TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&x, &weight, &bias, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "layer_norm", "operands");
  }
  cuda::launch_layer_norm(static_cast<const float*>(x.data), cuda::stride_of(x), static_cast<const float*>(weight.data),
                          static_cast<const float*>(bias.data), eps, static_cast<float*>(out.data),
                          cuda::stride_of(out), x.rows(), x.dims[0], s.stream);
  s.check_launch("layer_norm");
}

void CudaBackend::do_gelu_erf(TensorView& x) {
  State& s = *state_;
  cuda::require_device(s, x, "gelu_erf", "x");
  cuda::launch_gelu_erf(static_cast<float*>(x.data), cuda::stride_of(x), x.rows(), x.dims[0], s.stream);
  s.check_launch("gelu_erf");
}

void CudaBackend::do_gelu_tanh(TensorView& x) {
  State& s = *state_;
  cuda::require_device(s, x, "gelu_tanh", "x");
  cuda::launch_gelu_tanh(static_cast<float*>(x.data), cuda::stride_of(x), x.rows(), x.dims[0], s.gelu_table, s.stream);
  s.check_launch("gelu_tanh");
}

static_assert(static_cast<int>(Activation::QuickGelu) == cuda::hd::kQuickGelu &&
              static_cast<int>(Activation::GeluTanh) == cuda::hd::kGeluTanh &&
              static_cast<int>(Activation::GeluErf) == cuda::hd::kGeluErf &&
              static_cast<int>(Activation::Silu) == cuda::hd::kSilu &&
              static_cast<int>(Activation::Tanh) == cuda::hd::kTanh);

void CudaBackend::do_activation(TensorView& x, Activation kind) {
  State& s = *state_;
  cuda::require_device(s, x, "activation", "x");
  cuda::launch_activation(static_cast<float*>(x.data), cuda::stride_of(x), x.rows(), x.dims[0], static_cast<int>(kind),
                          s.stream);
  s.check_launch("activation");
}

namespace {

// bidirectional_attention on the tensor-core prefill kernel (CudaBackendOptions::
// encoder_tensor_cores): the keys and values packed as f16 rows, their heads padded to the tile's
// head dim with zeros (which add nothing to a score and write nothing), then one launch over the
// sequences' tasks. Rows no sequence owns are not written, as with the encoder kernel.
void tensor_core_bidirectional_attention(CudaBackend::State& s, const TensorView& q, const TensorView& k,
                                         const TensorView& v, std::span<const SequenceSlice> seqs,
                                         const AttentionConfig& config, TensorView& out) {
  const int64_t rows = q.rows(), dims = config.head_dim, padded = cuda::prefill_padded_head_dim(dims);
  const size_t packed_bytes = static_cast<size_t>(rows * config.n_kv_heads * padded) * sizeof(uint16_t);
  auto* k16 = static_cast<uint16_t*>(s.encoder_k_f16.ensure(packed_bytes, s.stream));
  auto* v16 = static_cast<uint16_t*>(s.encoder_v_f16.ensure(packed_bytes, s.stream));
  cuda::launch_pack_heads_f16(static_cast<const float*>(k.data), cuda::stride_of(k), rows, config.n_kv_heads, dims,
                              padded, k16, s.stream);
  cuda::launch_pack_heads_f16(static_cast<const float*>(v.data), cuda::stride_of(v), rows, config.n_kv_heads, dims,
                              padded, v16, s.stream);

  const cuda::DevicePrefillPlan plan =
      cuda::upload_prefill_plan(s, cuda::HostUploads::kEncoderRows, cuda::plan_bidirectional_tensor_core(seqs, config));

  cuda::TensorCorePrefillParams t;
  t.q = static_cast<const float*>(q.data);
  t.q_head_stride = dims;
  t.q_token_stride = cuda::stride_of(q);
  t.out = static_cast<float*>(out.data);
  t.out_head_stride = dims;
  t.out_token_stride = cuda::stride_of(out);
  t.dims = dims;
  t.n_heads = config.n_heads;
  t.n_kv_heads = config.n_kv_heads;
  t.head_dim = padded;
  t.score.scale = config.scale;
  t.bidirectional = true;
  t.k = k16;
  t.v = v16;
  t.k_row_bytes = t.v_row_bytes = static_cast<size_t>(config.n_kv_heads * padded) * sizeof(uint16_t);
  t.seqs = plan.seqs;
  t.block_tables = plan.block_tables;  // none: key j of a sequence is its batch row first_token + j
  t.tasks = plan.tasks;
  cuda::launch_tensor_core_prefill(t, plan.n_tasks, s.stream);
}

}  // namespace

void CudaBackend::do_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                             std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                             TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&q, &k, &v, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "bidirectional_attention", "tensors");
  }
  if (s.options.encoder_tensor_cores && s.compute_capability >= 80 &&
      cuda::prefill_padded_head_dim(config.head_dim) != 0) {
    if (q.rows() == 0) return;
    tensor_core_bidirectional_attention(s, q, k, v, seqs, config, out);
    s.check_launch("bidirectional_attention");
    return;
  }
  if (config.head_dim > cuda::kMaxEncoderHeadDim) {
    fail("bidirectional_attention: the CUDA kernel takes heads of up to {} values, not {}", cuda::kMaxEncoderHeadDim,
         config.head_dim);
  }
  if (k.row_bytes != v.row_bytes) fail("bidirectional_attention: the CUDA kernel needs k and v rows of one stride");
  // Each batch row's sequence (first row, rows), so a warp finds its keys without a search.
  std::vector<int32_t> row_sequences(static_cast<size_t>(2 * q.rows()), 0);
  for (const SequenceSlice& seq : seqs) {
    for (int64_t i = 0; i < seq.n_tokens; ++i) {
      row_sequences[static_cast<size_t>(2 * (seq.first_token + i))] = static_cast<int32_t>(seq.first_token);
      row_sequences[static_cast<size_t>(2 * (seq.first_token + i) + 1)] = static_cast<int32_t>(seq.n_tokens);
    }
  }
  if (q.rows() == 0) return;
  cuda::BidirectionalAttentionParams p;
  p.q = static_cast<const float*>(q.data);
  p.k = static_cast<const float*>(k.data);
  p.v = static_cast<const float*>(v.data);
  p.out = static_cast<float*>(out.data);
  p.q_stride = cuda::stride_of(q);
  p.kv_stride = cuda::stride_of(k);
  p.out_stride = cuda::stride_of(out);
  p.rows = q.rows();
  p.n_heads = config.n_heads;
  p.group = config.n_heads / config.n_kv_heads;
  p.head_dim = config.head_dim;
  p.scale = config.scale;
  p.row_sequences = static_cast<const int32_t*>(
      s.uploads->upload(cuda::HostUploads::kEncoderRows, row_sequences.data(), row_sequences.size() * sizeof(int32_t)));
  cuda::launch_bidirectional_attention(p, s.stream);
  s.check_launch("bidirectional_attention");
}

}  // namespace lumen::backend
