// CudaBackend's row-wise ops: the norms (with the quantization of their output for the GEMV after
// them, CudaBackendOptions::fused_input_quantization), the element-wise ops, the GLUs and RoPE.
#include <cmath>
#include <optional>

#include "backend/common/rope_params.h"
#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/kernels.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

struct FusedOutput {
  std::optional<tensor::DType> act;  // none: the producer writes its f32 output only
  cuda::Q8Activations q;
};

// The quantization a producer at `site` writes with its rows x cols output
// (CudaBackendOptions::fused_input_quantization): the type its consumer last read, for a
// batch the GEMV takes (larger ones go to cuBLAS, which reads no quantized activations).
FusedOutput fused_output(CudaBackend::State& s, const void* site, int64_t rows, int64_t cols) {
  FusedOutput fused;
  if (rows == 0 || rows > s.options.max_gemv_tokens) return fused;
  fused.act = s.fused_inputs.emit_for(site, cols);
  if (fused.act) {
    void* buffer = s.q8_activations.ensure(cuda::q8_activation_bytes(rows, cols), s.stream);
    fused.q = cuda::carve_q8_activations(buffer, rows, cols);
  }
  return fused;
}

}  // namespace

void CudaBackend::do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&x, &weight, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "rms_norm", "operands");
  }
  const int64_t rows = x.rows(), cols = x.dims[0];
  if (s.options.fused_input_quantization) {
    const FusedOutput fused = fused_output(s, weight.data, rows, cols);
    if (cuda::launch_rms_norm_rows(static_cast<const float*>(x.data), cuda::stride_of(x),
                                   static_cast<const float*>(weight.data), eps, static_cast<float*>(out.data),
                                   cuda::stride_of(out), rows, cols, fused.act ? &*fused.act : nullptr, fused.q,
                                   s.stream)) {
      s.check_launch("rms_norm");
      s.fused_inputs.produced(weight.data, out.data, rows, cols, cuda::stride_of(out), fused.act, op_calls());
      return;
    }
    s.fused_inputs.produced(weight.data, out.data, rows, cols, cuda::stride_of(out), std::nullopt, op_calls());
  }
  cuda::launch_rms_norm(static_cast<const float*>(x.data), cuda::stride_of(x), static_cast<const float*>(weight.data),
                        eps, static_cast<float*>(out.data), cuda::stride_of(out), rows, cols, s.stream);
  s.check_launch("rms_norm");
}

// The residual add and the next norm in one launch (32 launches fewer per 16-layer decode step;
// each was 2.6 us of device time on an H200, plus its launch).
void CudaBackend::do_add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps,
                                  TensorView& sum, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t :
       {&a, &b, &weight, static_cast<const TensorView*>(&sum), static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "add_rms_norm", "operands");
  }
  const int64_t rows = a.rows(), cols = a.dims[0];
  if (s.options.fused_input_quantization) {
    const FusedOutput fused = fused_output(s, weight.data, rows, cols);
    if (cuda::launch_add_rms_norm_rows(
            static_cast<const float*>(a.data), cuda::stride_of(a), static_cast<const float*>(b.data),
            cuda::stride_of(b), static_cast<float*>(sum.data), cuda::stride_of(sum),
            static_cast<const float*>(weight.data), eps, static_cast<float*>(out.data), cuda::stride_of(out), rows,
            cols, fused.act ? &*fused.act : nullptr, fused.q, s.stream)) {
      s.check_launch("add_rms_norm");
      s.fused_inputs.produced(weight.data, out.data, rows, cols, cuda::stride_of(out), fused.act, op_calls());
      return;
    }
    s.fused_inputs.produced(weight.data, out.data, rows, cols, cuda::stride_of(out), std::nullopt, op_calls());
  }
  cuda::launch_add_rms_norm(static_cast<const float*>(a.data), cuda::stride_of(a), static_cast<const float*>(b.data),
                            cuda::stride_of(b), static_cast<float*>(sum.data), cuda::stride_of(sum),
                            static_cast<const float*>(weight.data), eps, static_cast<float*>(out.data),
                            cuda::stride_of(out), rows, cols, s.stream);
  s.check_launch("add_rms_norm");
}

void CudaBackend::do_add(const TensorView& a, const TensorView& b, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&a, &b, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "add", "operands");
  }
  cuda::launch_add(static_cast<const float*>(a.data), cuda::stride_of(a), static_cast<const float*>(b.data),
                   cuda::stride_of(b), static_cast<float*>(out.data), cuda::stride_of(out), a.rows(), a.dims[0],
                   s.stream);
  s.check_launch("add");
}

void CudaBackend::do_add_row(TensorView& x, const TensorView& row) {
  State& s = *state_;
  cuda::require_device(s, x, "add_row", "x");
  cuda::require_device(s, row, "add_row", "row");
  cuda::launch_add_row(static_cast<float*>(x.data), cuda::stride_of(x), static_cast<const float*>(row.data), x.rows(),
                       x.dims[0], s.stream);
  s.check_launch("add_row");
}

void CudaBackend::do_scale(TensorView& x, float factor) {
  State& s = *state_;
  cuda::require_device(s, x, "scale", "x");
  cuda::launch_scale(static_cast<float*>(x.data), cuda::stride_of(x), factor, x.rows(), x.dims[0], s.stream);
  s.check_launch("scale");
}

// A rotated KV cache's Walsh-Hadamard rotation (elementwise.cu: the CPU's butterflies).
void CudaBackend::do_rotate_heads(TensorView& x, int64_t head_dim) {
  State& s = *state_;
  cuda::require_device(s, x, "rotate_heads", "x");
  if (!cuda::hadamard_width_supported(head_dim))
    fail("rotate_heads: the CUDA kernel takes heads up to 1024 values, not {}", head_dim);
  cuda::launch_hadamard(static_cast<float*>(x.data), cuda::stride_of(x), x.rows(), x.dims[0], head_dim, s.stream);
  s.check_launch("rotate_heads");
}

void CudaBackend::do_swiglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&gate, &up, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "swiglu", "operands");
  }
  const int64_t rows = gate.rows(), cols = gate.dims[0];
  if (s.options.fused_input_quantization) {
    // The site is the output buffer: SwiGLU has no weight of its own (the FFN's scratch, one per
    // model, so every layer's down projection teaches it the same type).
    const FusedOutput fused = fused_output(s, out.data, rows, cols);
    if (fused.act && cuda::launch_swiglu_quantized(static_cast<const float*>(gate.data), cuda::stride_of(gate),
                                                   static_cast<const float*>(up.data), cuda::stride_of(up),
                                                   static_cast<float*>(out.data), cuda::stride_of(out), rows, cols,
                                                   *fused.act, fused.q, s.stream)) {
      s.check_launch("swiglu");
      s.fused_inputs.produced(out.data, out.data, rows, cols, cuda::stride_of(out), fused.act, op_calls());
      return;
    }
    s.fused_inputs.produced(out.data, out.data, rows, cols, cuda::stride_of(out), std::nullopt, op_calls());
  }
  cuda::launch_swiglu(static_cast<const float*>(gate.data), cuda::stride_of(gate), static_cast<const float*>(up.data),
                      cuda::stride_of(up), static_cast<float*>(out.data), cuda::stride_of(out), rows, cols, s.stream);
  s.check_launch("swiglu");
}

void CudaBackend::do_geglu(const TensorView& gate, const TensorView& up, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&gate, &up, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "geglu", "operands");
  }
  cuda::launch_geglu(static_cast<const float*>(gate.data), cuda::stride_of(gate), static_cast<const float*>(up.data),
                     cuda::stride_of(up), static_cast<float*>(out.data), cuda::stride_of(out), gate.rows(),
                     gate.dims[0], s.gelu_table, s.stream);
  s.check_launch("geglu");
}

void CudaBackend::do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) {
  State& s = *state_;
  cuda::require_device(s, x, "rope", "x");
  const int64_t heads = x.dims[1];
  const int64_t tokens = x.dims[2] * x.dims[3];
  if (tokens == 0) return;
  const common::RopeParams params = common::make_rope_params(config, x.dims[0]);
  cuda::RopeKernelParams k;
  k.rope_dims = params.rope_dims;
  k.neox = params.neox;
  // The same f32 expressions as the CPU backend's rope_cache, evaluated here once.
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
  const int32_t* device_positions = s.step->device_indices(positions);
  if (device_positions == nullptr) {
    device_positions = static_cast<const int32_t*>(
        s.uploads->upload(cuda::HostUploads::kPositions, positions.data(), positions.size_bytes()));
  }
  cuda::launch_rope(static_cast<float*>(x.data), cuda::stride_of(x), heads, tokens, device_positions, k, s.stream);
  s.check_launch("rope");
}

}  // namespace lumen::backend
