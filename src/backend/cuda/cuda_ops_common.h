#pragma once
// Internal to the CUDA backend: the checks its kernels add to the shared ones (Backend's public
// methods, backend/common/op_checks.h): device memory, a type the kernels take; and what a
// producer that quantizes its output for the next GEMV writes (fused_input_quantization.h).
#include <cstdint>
#include <optional>
#include <string_view>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/kernels.h"
#include "util/error.h"

namespace lumen::backend::cuda {

// Throws unless t's memory is device memory (a view of host memory would crash the kernel).
inline void require_device(const CudaBackend::State& s, const TensorView& t, std::string_view op,
                           std::string_view name) {
  if (t.data != nullptr && !s.is_device(t.data)) {
    fail("{}: {} is not in device memory (allocate it from the CUDA backend)", op, name);
  }
}

inline void require_rows_type(tensor::DType type, std::string_view op) {
  if (!rows_supported(type)) {
    fail("{}: the CUDA backend has no kernels for {} tensors", op, tensor::dtype_name(type));
  }
}

// The plan's arrays in one upload to `slot` (cuda_attention.cc), for the tensor-core prefill
// kernel: a paged prefill's, or an encoder's (no block tables).
DevicePrefillPlan upload_prefill_plan(CudaBackend::State& s, HostUploads::Slot slot, const PrefillPlan& plan);

// gate = glu(gate + gate_bias, up + up_bias) over one expert's rows (gpt-oss's experts: the
// composed moe_ffn's BiasedGlu, the host-grouped way of moe_ffn_routed); either bias may be null.
// Swiglu and SwigluOai (cuda_routed_moe.cc).
void expert_glu(CudaBackend::State& s, TensorView& gate, const TensorView& up, const TensorView* gate_bias,
                const TensorView* up_bias, Glu glu);

// Floats from one row to the next of an f32 tensor (checked by common::check_f32 to be whole).
inline int64_t stride_of(const TensorView& t) {
  return static_cast<int64_t>(t.row_bytes / sizeof(float));
}

// What a producer writes besides its f32 output.
struct FusedOutput {
  std::optional<tensor::DType> act;  // none: the producer writes its f32 output only
  Q8Activations q;
};

// The quantization a producer at `site` writes with its rows x cols output
// (CudaBackendOptions::fused_input_quantization): the type its consumer last read, for a
// batch the GEMV takes (larger ones go to cuBLAS, which reads no quantized activations).
inline FusedOutput fused_output(CudaBackend::State& s, const void* site, int64_t rows, int64_t cols) {
  FusedOutput fused;
  if (rows == 0 || rows > s.options.max_gemv_tokens) return fused;
  fused.act = s.fused_inputs.emit_for(site, cols);
  if (fused.act) {
    void* buffer = s.q8_activations.ensure(q8_activation_bytes(rows, cols), s.stream);
    fused.q = carve_q8_activations(buffer, rows, cols);
  }
  return fused;
}

}  // namespace lumen::backend::cuda
