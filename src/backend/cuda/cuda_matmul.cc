// CudaBackend::matmul: the GEMV (up to options.max_gemv_tokens tokens, 8 per pass over the
// weights; gemv_stream.cu's, gemv_tiled.cu's or gemv.cu's kernels as options.gemv chooses) or, for
// larger batches, the int8 tensor-core GEMM (options.int8_gemm, legacy and K-quant types) or dequantize-to-f16
// + cuBLAS. matmul_same_input and matmul_glu group their GEMVs into one launch where they can
// (gemv_groups.h), and matmul_glu may run SwiGLU in that launch (options.glu_epilogue).
//
// The GEMM path converts a chunk of weight rows at a time into f16 scratch (at most
// kGemmChunkElements values, 128 MB), so its memory stays bounded whatever the matrix; the
// activations are scaled by a power of two into f16's range (gemm_prep.cu). f16 operands
// with f32 accumulation keep 11 bits per value, against the 8 of the CPU's Q8 activations.
#include <cublas_v2.h>

#include <algorithm>
#include <optional>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/gemv_groups.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/op_hold.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

using tensor::DType;

constexpr int64_t kGemmChunkElements = int64_t{64} << 20;

void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    fail("cuBLAS error in {}: status {}", what, static_cast<int>(status));
}

// y (column-major rows x n_tokens, leading dimension ldc) = A^T B for A = cols x rows (the
// weight rows as columns, leading dimension lda) and B = cols x n_tokens (ldb).
void gemm(cublasHandle_t handle, int64_t rows, int64_t n_tokens, int64_t cols, const void* alpha,
          const void* a, cudaDataType a_type, int64_t lda, const void* b, cudaDataType b_type,
          int64_t ldb, const void* beta, float* c, int64_t ldc) {
  check_cublas(
      cublasGemmEx(handle, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(rows),
                   static_cast<int>(n_tokens), static_cast<int>(cols), alpha, a, a_type,
                   static_cast<int>(lda), b, b_type, static_cast<int>(ldb), beta, c, CUDA_R_32F,
                   static_cast<int>(ldc), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
      "cublasGemmEx");
}

// x's rows in device memory: x itself, or host rows staged into scratch (the model writes logits
// straight into the caller's array, and hands host rows to matmul).
struct DeviceRows {
  const float* data;
  int64_t stride;
};
DeviceRows device_rows(CudaBackend::State& s, const TensorView& x, int64_t cols) {
  if (s.is_device(x.data)) return {static_cast<const float*>(x.data), cuda::stride_of(x)};
  const size_t row = static_cast<size_t>(cols) * sizeof(float);
  auto* staged = static_cast<float*>(s.staged_x.ensure(row * static_cast<size_t>(x.rows()), s.stream));
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  cuda::check_cuda(cudaMemcpy2DAsync(staged, row, x.data, x.row_bytes, row, static_cast<size_t>(x.rows()),
                                     cudaMemcpyHostToDevice, s.stream),
                   "cudaMemcpy2DAsync");
  return {staged, cols};
}

// x quantized as `act` for `readers` GEMVs in op call `op`. Quantizes only when neither x's
// producer (fused_input_quantization.h) nor an earlier output of the same matmul_same_input has.
cuda::Q8Activations quantized_rows(CudaBackend::State& s, DeviceRows x, DType act, int64_t n_tokens, int64_t cols,
                                   uint64_t op, size_t readers) {
  void* const before = s.q8_activations.data();
  void* buffer = s.q8_activations.ensure(cuda::q8_activation_bytes(n_tokens, cols), s.stream);
  if (buffer != before) s.fused_inputs.scratch_overwritten();  // grown: what it held is gone
  const cuda::Q8Activations q = cuda::carve_q8_activations(buffer, n_tokens, cols);
  const CudaBackend::State::QuantizedInput input{x.data, act, n_tokens, cols};
  // The op just before (a norm, SwiGLU) may have quantized this input already; asking also
  // teaches it which type to write. Each reader asks, as each would alone.
  bool prequantized = false;
  if (s.options.fused_input_quantization) {
    for (size_t r = 0; r < readers; ++r) {
      const bool ready = s.fused_inputs.consume(x.data, act, n_tokens, cols, x.stride, op);
      if (r == 0) prequantized = ready;
    }
  }
  // A producer that wrote its codes elsewhere (the GLU epilogue) named the buffer.
  if (prequantized && s.fused_inputs.producer_codes() != nullptr) {
    return cuda::carve_q8_activations(s.fused_inputs.producer_codes(), n_tokens, cols);
  }
  if (!prequantized && (!s.sharing_input || s.quantized_input != input)) {
    cuda::launch_quantize_activations(act, x.data, x.stride, n_tokens, cols, q, s.stream);
    s.fused_inputs.scratch_overwritten();
    s.quantized_input = s.sharing_input ? input : CudaBackend::State::QuantizedInput{};
  }
  return q;
}

// Whether the quantized GEMV of `type` runs the tiled kernels (options.gemv), or their pipelined
// form, which takes the same calls.
bool tiled_gemv_for(const CudaBackend::State& s, DType type) {
  return s.options.gemv == GemvKernels::Tiled || s.options.gemv == GemvKernels::Pipelined ||
         (s.options.gemv == GemvKernels::ByMeasurement && type != DType::Q8_0);
}

// One tiled GEMV launch over `matrices` (same type and width): the pipelined kernels where
// options.gemv asks for them and they take the call (up to kGemvMaxTokens tokens, sm_80+), else
// the tiled ones; both write the same bits. False when neither took it (rows not whole 16-byte
// vectors at 16-byte boundaries).
bool launch_tiled_gemv(CudaBackend::State& s, DType type, size_t row_bytes, int64_t cols,
                       std::span<const cuda::TiledGemvMatrix> matrices, const cuda::Q8Activations& q,
                       int64_t n_tokens) {
  if (s.options.gemv == GemvKernels::Pipelined && s.compute_capability >= 80 &&
      cuda::launch_gemv_quantized_pipelined_group(type, row_bytes, cols, matrices, q, 0, n_tokens, s.stream)) {
    ++s.pipelined_gemv_launches;
    return true;
  }
  return cuda::launch_gemv_quantized_tiled_group(type, row_bytes, cols, matrices, q, 0, n_tokens, s.stream);
}

// Whether `o` can join a grouped launch (gemv_groups.h) for n_tokens rows of x.
bool groupable(const CudaBackend::State& s, const Backend::MatmulOutput& o, int64_t n_tokens) {
  const TensorView& w = *o.w;
  const DType act = cuda::gemv_activation_type(w.type);
  const auto row_bytes = tensor::row_bytes(w.type, w.dims[0]);
  return n_tokens <= s.options.max_gemv_tokens && act != DType::F32 && act != DType::I8 && tiled_gemv_for(s, w.type) &&
         row_bytes && *row_bytes == w.row_bytes && w.row_bytes % 16 == 0 &&
         reinterpret_cast<uintptr_t>(w.data) % 16 == 0 && s.is_device(w.data) && s.is_device(o.y->data);
}

}  // namespace

// Several outputs of one weight type and width (gemv_groups.h) in one tiled GEMV launch.
void CudaBackend::matmul_grouped(const TensorView& x, std::span<const MatmulOutput> outputs,
                                 std::span<const size_t> members) {
  State& s = *state_;
  const TensorView& first = *outputs[members[0]].w;
  const int64_t cols = first.dims[0], n_tokens = x.rows();
  if (n_tokens == 0) return;
  const DType act = cuda::gemv_activation_type(first.type);
  const cuda::Q8Activations q =
      quantized_rows(s, device_rows(s, x, cols), act, n_tokens, cols, op_calls(), members.size());
  std::vector<cuda::TiledGemvMatrix> matrices;
  for (const size_t i : members) {
    const MatmulOutput& o = outputs[i];
    matrices.push_back({o.w->data, o.w->dims[1], static_cast<float*>(o.y->data), cuda::stride_of(*o.y)});
  }
  if (!launch_tiled_gemv(s, first.type, first.row_bytes, cols, matrices, q, n_tokens)) {
    fail("matmul: the grouped {} GEMV refused {} matrices its plan accepted", tensor::dtype_name(first.type),
         members.size());
  }
  s.check_launch("matmul");
  ++s.grouped_gemv_launches;
}

// Outputs that read one input (Q/K/V, gate/up) quantize it once: the plain composition
// quantized it per matmul, 7 launches a layer where 2 do (2.8 us each on an H200, 12% of a 1B
// Q4_0 decode step's kernel time). The reuse key is the input's device address (host inputs
// are staged to the same scratch each time), the activation type and the shape; the scratch
// only grows, and only for a larger shape, which is a new key.
void CudaBackend::do_matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) {
  State& s = *state_;
  struct EndSharing {
    State& s;
    ~EndSharing() {
      s.sharing_input = false;
      s.quantized_input = {};
      s.converted_input = {};
    }
  } end_sharing{s};
  s.sharing_input = true;
  s.quantized_input = {};
  s.converted_input = {};
  if (!s.options.grouped_gemv || outputs.size() < 2) {
    for (const MatmulOutput& o : outputs) do_matmul(*o.w, x, *o.y);
    return;
  }
  std::vector<cuda::GemvGroupCandidate> candidates;
  for (const MatmulOutput& o : outputs) candidates.push_back({o.w->type, o.w->row_bytes, groupable(s, o, x.rows())});
  for (const std::vector<size_t>& launch : cuda::gemv_launch_groups(candidates, cuda::kMaxTiledGemvMatrices)) {
    if (launch.size() == 1) {
      do_matmul(*outputs[launch[0]].w, x, *outputs[launch[0]].y);
    } else {
      matmul_grouped(x, outputs, launch);
    }
  }
}

// SwiGLU in the gate/up GEMV's launch (options.glu_epilogue, gemv_tiled.cu's epilogue), where the
// plain way is the grouped GEMV and then swiglu's quantizing launch: one launch fewer a layer. Only
// where that plain way would have fused the quantization: a decode-sized batch, gate and up in
// one tiled launch, and a down projection already known to read Q8_0 or Q8_1 (the first step of
// a shape runs the plain way, which teaches SwiGLU's site its consumer). False: nothing ran.
bool CudaBackend::matmul_glu_epilogue(const TensorView& gate_w, const TensorView& up_w, const TensorView& x,
                                      TensorView& gate, TensorView& up) {
  State& s = *state_;
  if (!s.options.glu_epilogue || !s.options.fused_input_quantization || !s.options.grouped_gemv ||
      s.options.gemv == GemvKernels::Pipelined) {
    return false;
  }
  const int64_t n_tokens = x.rows(), rows = gate_w.dims[1], cols = gate_w.dims[0];
  const MatmulOutput outputs[] = {{&gate_w, &gate}, {&up_w, &up}};
  if (n_tokens == 0 || gate_w.type != up_w.type || gate_w.row_bytes != up_w.row_bytes || up_w.dims[1] != rows ||
      !groupable(s, outputs[0], n_tokens) || !groupable(s, outputs[1], n_tokens)) {
    return false;
  }
  const std::optional<DType> down_act = s.fused_inputs.emit_for(gate.data, rows);  // do_swiglu's site
  if (!down_act || !cuda::tiled_glu_takes(gate_w.type, rows, *down_act)) return false;
  // A recording cannot allocate, and one refused leaves its shape eager for good: where the
  // buffers would have to grow (a one-layer model learns the consumer in the shape's first step,
  // the one before its recording), the recording keeps the plain launches.
  const size_t code_bytes = cuda::q8_activation_bytes(n_tokens, rows);
  if (cuda::capturing() &&
      (s.glu_q8_activations.capacity() < code_bytes || s.glu_epilogue_counters.would_grow(rows / 32))) {
    return false;
  }

  const DType act = cuda::gemv_activation_type(gate_w.type);
  const cuda::Q8Activations q = quantized_rows(s, device_rows(s, x, cols), act, n_tokens, cols, op_calls(), 2);
  void* codes = s.glu_q8_activations.ensure(code_bytes, s.stream);
  cuda::GluEpilogue glu;
  glu.counters = s.glu_epilogue_counters.ensure(rows / 32, s.stream, "zeroing the GLU epilogue's counts");
  glu.out = static_cast<float*>(gate.data);
  glu.out_stride = cuda::stride_of(gate);
  glu.q = cuda::carve_q8_activations(codes, n_tokens, rows);
  glu.act = *down_act;
  const cuda::TiledGemvMatrix gate_m{gate_w.data, rows, static_cast<float*>(gate.data), cuda::stride_of(gate)};
  const cuda::TiledGemvMatrix up_m{up_w.data, rows, static_cast<float*>(up.data), cuda::stride_of(up)};
  if (!cuda::launch_gemv_quantized_tiled_glu(gate_w.type, gate_w.row_bytes, cols, gate_m, up_m, q, n_tokens, glu,
                                             s.stream)) {
    fail("matmul_glu: the GLU epilogue refused a {} pair of {} rows it was planned for",
         tensor::dtype_name(gate_w.type), rows);
  }
  s.check_launch("matmul_glu");
  ++s.grouped_gemv_launches;
  ++s.glu_epilogue_launches;
  s.fused_inputs.produced(gate.data, gate.data, n_tokens, rows, cuda::stride_of(gate), down_act, op_calls(), codes);
  return true;
}

void CudaBackend::do_matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu,
                                TensorView& gate, TensorView& up) {
  if (glu == Glu::Swiglu && matmul_glu_epilogue(gate_w, up_w, x, gate, up)) return;
  Backend::do_matmul_glu(gate_w, up_w, x, glu, gate, up);
}

void CudaBackend::do_matmul(const TensorView& w, const TensorView& x, TensorView& y) {
  State& s = *state_;
  const DType act = cuda::gemv_activation_type(w.type);
  if (act == DType::I8)
    fail("matmul: the CUDA backend has no kernels for {} weights", tensor::dtype_name(w.type));
  const auto expected = tensor::row_bytes(w.type, w.dims[0]);
  if (!expected || *expected != w.row_bytes || w.data == nullptr) {
    fail("matmul: bad {} weight matrix {} x {} ({} bytes per row)", tensor::dtype_name(w.type),
         w.dims[1], w.dims[0], w.row_bytes);
  }
  cuda::require_device(s, w, "matmul", "w");
  const int64_t rows = w.dims[1], cols = w.dims[0], n_tokens = x.rows();
  if (n_tokens == 0 || rows == 0) return;
  const size_t x_row = static_cast<size_t>(cols) * sizeof(float);
  const size_t y_row = static_cast<size_t>(rows) * sizeof(float);

  // Host operands go through device scratch; so do results bound for host memory.
  const DeviceRows xrows = device_rows(s, x, cols);
  const float* const xd = xrows.data;
  const int64_t xs = xrows.stride;
  const bool y_on_host = !s.is_device(y.data);
  auto* yd = static_cast<float*>(y.data);
  int64_t ys = cuda::stride_of(y);
  if (y_on_host) {
    cuda::release_op_hold();  // a copy to or from host memory may wait for the device
    yd = static_cast<float*>(s.staged_y.ensure(y_row * static_cast<size_t>(n_tokens), s.stream));
    ys = rows;
  }

  if (n_tokens <= s.options.max_gemv_tokens) {
    if (act == DType::F32) {
      for (int64_t t0 = 0; t0 < n_tokens; t0 += cuda::kGemvMaxTokens) {
        const int64_t nt = std::min<int64_t>(cuda::kGemvMaxTokens, n_tokens - t0);
        // The pipelined kernels where asked for and they take the rows, else the streaming ones,
        // else gemv.cu's.
        if (s.options.gemv == GemvKernels::Pipelined && s.compute_capability >= 80 &&
            cuda::launch_gemv_float_pipelined(w.type, w.data, w.row_bytes, rows, cols, xd + t0 * xs, xs, nt,
                                              yd + t0 * ys, ys, s.stream)) {
          ++s.pipelined_gemv_launches;
        } else if (s.options.gemv == GemvKernels::Warp ||
                   !cuda::launch_gemv_float_stream(w.type, w.data, w.row_bytes, rows, cols, xd + t0 * xs, xs, nt,
                                                   yd + t0 * ys, ys, s.stream)) {
          cuda::launch_gemv_float(w.type, w.data, w.row_bytes, rows, cols, xd + t0 * xs, xs, nt, yd + t0 * ys, ys,
                                  s.stream);
        }
      }
    } else {
      const cuda::Q8Activations q = quantized_rows(s, xrows, act, n_tokens, cols, op_calls(), 1);
      // The tiled kernels take every token in one launch (a row of one tile read once for all);
      // the others a pass of kGemvMaxTokens tokens per launch.
      const cuda::TiledGemvMatrix one{w.data, rows, yd, ys};
      if (!tiled_gemv_for(s, w.type) || !launch_tiled_gemv(s, w.type, w.row_bytes, cols, {&one, 1}, q, n_tokens)) {
        for (int64_t t0 = 0; t0 < n_tokens; t0 += cuda::kGemvMaxTokens) {
          const int64_t nt = std::min<int64_t>(cuda::kGemvMaxTokens, n_tokens - t0);
          if (s.options.gemv != GemvKernels::Stream ||
              !cuda::launch_gemv_quantized_stream(w.type, w.data, w.row_bytes, rows, cols, q, t0, nt, yd + t0 * ys, ys,
                                                  s.stream)) {
            cuda::launch_gemv_quantized(w.type, w.data, w.row_bytes, rows, cols, q, t0, nt, yd + t0 * ys, ys, s.stream);
          }
        }
      }
    }
  } else if (s.options.int8_gemm && s.compute_capability >= 80 && cuda::int8_gemm_takes(w.type)) {
    const cuda::Q8Activations q = quantized_rows(s, xrows, act, n_tokens, cols, op_calls(), 1);
    if (!cuda::launch_gemm_int8(w.type, w.data, w.row_bytes, rows, cols, q, n_tokens, yd, ys, s.stream)) {
      fail("matmul: the int8 GEMM refused a {} matrix {} x {} for {} tokens", tensor::dtype_name(w.type), rows, cols,
           n_tokens);
    }
    ++s.int8_gemm_launches;
  } else if (w.type == DType::F32) {
    const float one = 1.0f, zero = 0.0f;
    gemm(s.cublas, rows, n_tokens, cols, &one, w.data, CUDA_R_32F,
         static_cast<int64_t>(w.row_bytes / 4), xd, CUDA_R_32F, xs, &zero, yd, ys);
  } else {
    auto* x16 = static_cast<uint16_t*>(
        s.gemm_x.ensure(x_row / 2 * static_cast<size_t>(n_tokens), s.stream));
    auto* scale = static_cast<float*>(s.gemm_scale.ensure(4 * sizeof(float), s.stream));
    // Inside matmul_same_input the outputs after the first find x converted already.
    const State::QuantizedInput input{xd, DType::F16, n_tokens, cols};
    if (!s.sharing_input || s.converted_input != input) {
      cuda::launch_convert_activations_f16(xd, xs, n_tokens, cols, scale, x16, s.stream);
      s.converted_input = s.sharing_input ? input : State::QuantizedInput{};
    }
    // alpha undoes the activations' scale; both come from device memory.
    check_cublas(cublasSetPointerMode(s.cublas, CUBLAS_POINTER_MODE_DEVICE),
                 "cublasSetPointerMode");
    const float* alpha = scale + 2;
    const float* beta = scale + 3;
    if (w.type == DType::F16) {
      gemm(s.cublas, rows, n_tokens, cols, alpha, w.data, CUDA_R_16F,
           static_cast<int64_t>(w.row_bytes / 2), x16, CUDA_R_16F, cols, beta, yd, ys);
    } else {
      const int64_t chunk = std::clamp<int64_t>(kGemmChunkElements / cols, 1, rows);
      auto* w16 = static_cast<uint16_t*>(
          s.gemm_weights.ensure(static_cast<size_t>(chunk * cols) * sizeof(uint16_t), s.stream));
      for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
        const int64_t nr = std::min(chunk, rows - r0);
        cuda::launch_dequantize_to_f16(
            w.type, static_cast<const uint8_t*>(w.data) + r0 * static_cast<int64_t>(w.row_bytes),
            w.row_bytes, nr, cols, w16, s.stream);
        gemm(s.cublas, nr, n_tokens, cols, alpha, w16, CUDA_R_16F, cols, x16, CUDA_R_16F, cols,
             beta, yd + r0, ys);
      }
    }
    check_cublas(cublasSetPointerMode(s.cublas, CUBLAS_POINTER_MODE_HOST), "cublasSetPointerMode");
  }
  s.check_launch("matmul");

  if (y_on_host) {
    cuda::check_cuda(
        cudaMemcpy2DAsync(y.data, y.row_bytes, yd, y_row, y_row, static_cast<size_t>(n_tokens),
                          cudaMemcpyDeviceToHost, s.stream),
        "cudaMemcpy2DAsync");
    synchronize();
  }
}

}  // namespace lumen::backend
