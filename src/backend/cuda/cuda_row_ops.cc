// CudaBackend's row-wise ops: the norms (with the quantization of their output for the GEMV after
// them, CudaBackendOptions::fused_input_quantization), the element-wise ops and the GLUs (RoPE:
// cuda_rope_kv.cc).
#include <optional>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/kernels.h"
#include "util/error.h"

namespace lumen::backend {

void CudaBackend::do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) {
  State& s = *state_;
  for (const TensorView* t : {&x, &weight, static_cast<const TensorView*>(&out)}) {
    cuda::require_device(s, *t, "rms_norm", "operands");
  }
  const int64_t rows = x.rows(), cols = x.dims[0];
  if (s.options.fused_input_quantization) {
    const cuda::FusedOutput fused = cuda::fused_output(s, weight.data, rows, cols);
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
    const cuda::FusedOutput fused = cuda::fused_output(s, weight.data, rows, cols);
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
    const cuda::FusedOutput fused = cuda::fused_output(s, out.data, rows, cols);
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

}  // namespace lumen::backend
