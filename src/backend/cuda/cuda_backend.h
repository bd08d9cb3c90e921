#pragma once
// The CUDA implementation of the Backend interface: weights, activations and the paged K/V
// cache live in device memory, every op is a kernel on one stream of one device, and the host
// spans the interface passes (positions, token ids, block tables) are uploaded per call.
//
// Numerics follow the CPU backend, which follows llama.cpp, so the two can be compared op by
// op (tests/unit/backend_cuda): activations are quantized to Q8_0 / Q8_1 / Q8_K with the same
// rounding before integer dot products, rms_norm sums squares in double, rope builds its
// angles with the same f32 recurrence, GeGLU reads the same f16 table, and attention over an
// f16 V cache rounds probabilities to f16 after a whole-row softmax as llama.cpp's default
// path does. What differs is the order of float sums (many threads instead of one loop), and
// large batches, whose matmuls go through cuBLAS on f16 operands.
//
// This header includes no CUDA header, so plain C++ code (the CLI) can create the backend.
#include <cstddef>
#include <cstdint>
#include <memory>

#include "backend/backend.h"

namespace lumen::backend {

struct CudaBackendOptions {
  // matmuls over at most this many tokens run the quantized GEMV kernels (8 tokens per pass
  // over the weights); more tokens go through dequantize-to-f16 + cuBLAS. A large value keeps
  // every matmul on the GEMV kernels, whose result for a token does not depend on the rest of
  // the batch (what the serving core's bit-exactness tests assume).
  int64_t max_gemv_tokens = 8;
  // f16 V cache: reproduce llama.cpp's default attention (whole-row softmax, probabilities
  // rounded to f16; two passes over K). false: one online-softmax pass in f32 (faster, differs
  // from the CPU backend by the f16 rounding of the probabilities).
  bool exact_f16_attention = true;
  // GEMV by gemv_stream.cu's kernels (a block of 4 warps per weight row, 16-byte loads) where
  // the rows allow, else by gemv.cu's (one warp per row), which are their reference. Off until
  // a GPU run has checked the new kernels (scripts/gpu_check.sh); the environment variable
  // LUMEN_CUDA_GEMV=stream (or =warp) sets it for any binary, for A/B runs.
  bool streaming_gemv = false;
};

class CudaBackend final : public Backend {
 public:
  // Uses CUDA device `device` (throws lumen::Error when it does not exist).
  explicit CudaBackend(int device, CudaBackendOptions options = {});
  ~CudaBackend() override;
  CudaBackend(const CudaBackend&) = delete;
  CudaBackend& operator=(const CudaBackend&) = delete;

  std::string_view name() const override { return "cuda"; }
  // cudaMemGetInfo on this backend's device.
  std::optional<DeviceMemory> device_memory() const override;
  const CudaBackendOptions& options() const;
  void set_options(const CudaBackendOptions& options);

  // Device memory, zero-filled.
  std::unique_ptr<Buffer> allocate(size_t bytes) override;
  // Copies the weights to device memory through pinned staging, asynchronously (ops queued
  // later see them). The copy lives as long as the backend.
  TensorView upload_weights(tensor::DType type, std::array<int64_t, 4> dims,
                            const void* host_data) override;
  // Waits for all queued work, then converts src's rows to f32 on the host.
  void copy_to_host(const TensorView& src, float* dst) override;

  // y may be host memory (the model writes logits straight into the caller's array): the
  // result is then computed into device scratch and copied back before returning.
  void matmul(const TensorView& w, const TensorView& x, TensorView& y) override;
  void get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) override;
  void rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) override;
  void add(const TensorView& a, const TensorView& b, TensorView& out) override;
  void add_row(TensorView& x, const TensorView& row) override;
  void scale(TensorView& x, float factor) override;
  void swiglu(const TensorView& gate, const TensorView& up, TensorView& out) override;
  void geglu(const TensorView& gate, const TensorView& up, TensorView& out) override;
  // config.freq_factors may point to host or device memory.
  void rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) override;
  void store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                KvLayer& cache) override;
  void copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) override;
  void read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) override;
  void write_kv_block(KvLayer& cache, int64_t block, const void* host_k,
                      const void* host_v) override;
  void attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                 const AttentionConfig& config, TensorView& out) override;

  // Raw copies between host memory and device memory of this backend (tests, tools). Both wait
  // for the copy (and everything queued before it) to finish.
  void upload(void* device_dst, const void* host_src, size_t bytes);
  void download(void* host_dst, const void* device_src, size_t bytes);
  // Waits for all queued work; throws lumen::Error naming the first failed kernel's error.
  void synchronize();

  struct State;

 private:
  std::unique_ptr<State> state_;
};

// The number of CUDA devices this process can use (0 when there is no driver or no device).
int cuda_device_count();

// The backend for `device`, as the CLI's backend flag would create it.
std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options = {});

}  // namespace lumen::backend
