// CudaBackend: device selection, memory, weights and get_rows. The row-wise ops live in
// cuda_row_ops.cc, matmul in cuda_matmul.cc, the K/V cache and attention in cuda_attention.cc.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include "backend/common/gelu_table.h"
#include "backend/cuda/attention_kernels.h"
#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/dependent_launch_streams.h"
#include "backend/cuda/device_ceilings.h"
#include "backend/cuda/graph_capture.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/op_hold.h"
#include "tensor/fp16.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

using cuda::check_cuda;

class DeviceBuffer final : public Buffer {
 public:
  DeviceBuffer(size_t bytes, std::shared_ptr<cuda::AllocationRegistry> registry, cudaStream_t stream)
      : size_(bytes), registry_(std::move(registry)) {
    cuda::refuse_in_capture("allocate");
    cuda::advance_allocation_epoch();
    const cudaError_t status = cudaMalloc(&data_, std::max<size_t>(bytes, 1));
    if (status != cudaSuccess) {
      cudaGetLastError();
      fail("allocate: {} bytes of device memory: {}", bytes, cudaGetErrorString(status));
    }
    // Zero-filled like the CPU backend's buffers, on the backend's own stream, so every later op
    // of the backend runs after the clearing. (A plain cudaMemset runs on the legacy default
    // stream, which the backend's non-blocking stream does not wait for, and returns before it
    // is done: on an H200 the clearing of a fresh KV cache overwrote bytes the first store_kv had
    // just written, 2026-11-28.)
    check_cuda(cudaMemsetAsync(data_, 0, std::max<size_t>(bytes, 1), stream), "cudaMemsetAsync");
    registry_->add(data_, std::max<size_t>(bytes, 1));
  }
  ~DeviceBuffer() override {
    // Kernels already queued may still use the memory (a model growing its activations frees
    // the old ones mid-stream); buffers are freed rarely, so waiting for the device is cheap.
    cudaDeviceSynchronize();
    registry_->remove(data_);
    cudaFree(data_);
    cuda::advance_allocation_epoch();
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return size_; }

 private:
  void* data_ = nullptr;
  size_t size_;
  std::shared_ptr<cuda::AllocationRegistry> registry_;
};

// ggml's GELU table (backend/common/gelu_table.h) as f16 bits: entry h is f16(gelu(f16 value h)).
// Only entries for |h| < 10 are read; the rest hold whatever the function gives.
std::vector<uint16_t> gelu_table() {
  std::vector<uint16_t> table(1 << 16);
  for (uint32_t bits = 0; bits < table.size(); ++bits) {
    const float h = tensor::fp16_to_float(static_cast<uint16_t>(bits));
    table[bits] = tensor::float_to_fp16(common::gelu_tanh_like_ggml(h));
  }
  return table;
}

}  // namespace

int cuda_device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

std::unique_ptr<Backend> make_cuda_backend(int device, CudaBackendOptions options) {
  return std::make_unique<CudaBackend>(device, options);
}

bool CudaBackend::do_supports(BackendFeature feature) const {
  if (feature == BackendFeature::TreeAttention) return state_->options.tree_attention;
  if (feature == BackendFeature::StateSpace) return state_->options.state_space;
  if (feature == BackendFeature::LatentAttention) return state_->options.latent_attention;
  if (feature == BackendFeature::KvEviction) return state_->options.kv_eviction;
  if (feature == BackendFeature::LayerNorm) return state_->options.layer_norm;
  if (feature == BackendFeature::Encoder) return state_->options.encoder;
  if (feature == BackendFeature::Alibi) return state_->options.alibi;
  if (feature == BackendFeature::SpanAttention) return state_->options.span_attention;
  if (feature == BackendFeature::AttentionSinks) return state_->options.attention_sinks;
  if (feature == BackendFeature::Rwkv7) return state_->options.rwkv7;
  if (feature == BackendFeature::BiasedExperts) return state_->options.biased_experts;
  return feature == BackendFeature::MoeFfn || feature == BackendFeature::ShiftKeys ||
         feature == BackendFeature::RotatedKv;
}

// A weight is read by matmul (the GEMV kernels, or dequantization to f16 for cuBLAS: the same
// types as get_rows) and, for an embedding, by get_rows.
bool CudaBackend::do_supports_weight_type(tensor::DType type) const {
  return cuda::gemv_activation_type(type) != tensor::DType::I8 && cuda::rows_supported(type);
}

// store_kv writes and the attention kernels widen these as the CPU does (kv_codec.h). q8_0 and
// q4_0 (CudaBackendOptions::quantized_kv_cache): on H200 runs (2026-11-28, and again 2026-11-29
// after DeviceBuffer's zero-fill race was fixed) a block's scale came back with its low byte 0
// and every other byte right; kv_codec.h's store_u16 wrote the converted half as two byte
// stores, now one 16-bit store.
bool CudaBackend::do_supports_kv_type(tensor::DType type) const {
  using tensor::DType;
  if (type == DType::Q8_0 || type == DType::Q4_0) return state_->options.quantized_kv_cache;
  return type == DType::F32 || type == DType::F16 || type == DType::BF16 || type == DType::FP8_E4M3;
}

int64_t CudaBackend::do_max_attention_head_dim() const { return cuda::kMaxHeadDim; }
int64_t CudaBackend::do_max_latent_attention_head_dim() const { return cuda::kMaxLatentHeadDim; }

// No fused kernel yet: the composition of get_rows, matmul_glu, matmul, scale and add, each
// conformance-tested here (common/composed_moe_ffn.h says what it costs).
void CudaBackend::do_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                             TensorView& out) {
  state_->moe->run(*this, x, experts, n_slots, glu, out);
}

// Context shift composed of get_rows, rope and store_kv (common/composed_shift_keys.h).
void CudaBackend::do_shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta,
                                const RopeConfig& config, int64_t head_dim) {
  state_->shift->run(*this, cache, blocks, delta, config, head_dim);
}

CudaBackend::State::~State() {
  if (stream != nullptr) cudaStreamSynchronize(stream);
  cuda::set_dependent_launch(stream, false);  // before the address can name another stream
  moe.reset();
  shift.reset();
  uploads.reset();
  graphs.reset();
  step_timer.reset();
  op_timer.reset();  // releases a hold still queued
  step.reset();
  stager.reset();
  for (void* w : weights) cudaFree(w);
  if (gelu_table != nullptr) cudaFree(gelu_table);
  if (cublas != nullptr) cublasDestroy(cublas);
  if (stream != nullptr) cudaStreamDestroy(stream);
}

void CudaBackend::State::apply_dependent_launch() const {
  // The instructions exist from sm_90; older devices would ignore the attribute, but asking
  // nothing of them keeps their launches exactly as before.
  cuda::set_dependent_launch(stream, options.dependent_launch && compute_capability >= 90);
}

void CudaBackend::State::check_launch(std::string_view op) const {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess) fail("{}: kernel launch failed: {}", op, cudaGetErrorString(status));
}

CudaBackend::CudaBackend(int device, CudaBackendOptions options)
    : state_(std::make_unique<State>()) {
  const int count = cuda_device_count();
  if (device < 0 || device >= count)
    fail("CUDA device {} does not exist ({} found)", device, count);
  State& s = *state_;
  s.device = device;
  s.options = options_with_environment(options);
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  cudaDeviceProp properties{};
  check_cuda(cudaGetDeviceProperties(&properties, device), "cudaGetDeviceProperties");
  s.compute_capability = properties.major * 10 + properties.minor;
  check_cuda(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking), "cudaStreamCreate");
  if (cublasCreate(&s.cublas) != CUBLAS_STATUS_SUCCESS) fail("cuBLAS could not be initialised");
  if (cublasSetStream(s.cublas, s.stream) != CUBLAS_STATUS_SUCCESS) fail("cublasSetStream failed");
  s.uploads = std::make_unique<cuda::HostUploads>(s.stream);
  s.stager = std::make_unique<cuda::WeightStager>(s.stream);
  s.step = std::make_unique<cuda::StepUploads>(s.stream);
  s.step->set_decode_tables(s.options.step_graphs);
  s.graphs = std::make_unique<cuda::StepGraphs>(s.stream);
  s.moe = std::make_unique<common::ComposedMoeFfn>(
      [&s](TensorView& gate, const TensorView& up, const TensorView* gate_bias, const TensorView* up_bias, Glu glu) {
        cuda::expert_glu(s, gate, up, gate_bias, up_bias, glu);
      });
  s.apply_dependent_launch();
  const std::vector<uint16_t> table = gelu_table();
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&s.gelu_table), table.size() * sizeof(uint16_t)),
             "cudaMalloc");
  check_cuda(cudaMemcpy(s.gelu_table, table.data(), table.size() * sizeof(uint16_t),
                        cudaMemcpyHostToDevice),
             "cudaMemcpy");
}

CudaBackend::~CudaBackend() = default;

std::optional<DeviceMemory> CudaBackend::device_memory() const {
  check_cuda(cudaSetDevice(state_->device), "cudaSetDevice");
  size_t free_bytes = 0, total_bytes = 0;
  check_cuda(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return DeviceMemory{free_bytes, total_bytes};
}

const CudaBackendOptions& CudaBackend::options() const { return state_->options; }
void CudaBackend::set_options(const CudaBackendOptions& options) {
  if (in_step()) fail("set_options: a step is open");
  State& s = *state_;
  s.options = options;
  s.step->set_decode_tables(options.step_graphs);
  s.apply_dependent_launch();
  s.graphs->clear();  // recorded with the old options' kernels
}

bool CudaBackend::dependent_launches() const { return cuda::dependent_launch(state_->stream); }
uint64_t CudaBackend::prequantized_inputs() const { return state_->fused_inputs.prequantized(); }
uint64_t CudaBackend::grouped_gemv_launches() const { return state_->grouped_gemv_launches; }
uint64_t CudaBackend::pipelined_gemv_launches() const { return state_->pipelined_gemv_launches; }
uint64_t CudaBackend::int8_gemm_launches() const { return state_->int8_gemm_launches; }
uint64_t CudaBackend::expert_gemm_layers() const { return state_->expert_gemm_layers; }
uint64_t CudaBackend::fused_combine_calls() const { return state_->fused_combine_calls; }
uint64_t CudaBackend::glu_epilogue_launches() const { return state_->glu_epilogue_launches; }
void CudaBackend::do_time_steps(bool on) { state_->step_timer->enable(on); }
StepDeviceTime CudaBackend::do_step_device_time() const {
  return {state_->step_timer->steps(), state_->step_timer->seconds()};
}

bool CudaBackend::do_time_ops(bool on) {
  state_->op_timer->enable(on);
  return true;
}

// A recorded step replays without its host calls: nothing to mark there.
void CudaBackend::do_mark_op_time() {
  if (state_->op_timer->enabled() && !cuda::capturing()) state_->op_timer->mark(state_->stream);
}

std::vector<double> CudaBackend::do_take_op_times() { return state_->op_timer->take(); }

std::optional<DeviceCeilings> CudaBackend::do_measure_device_ceilings() {
  synchronize();
  return cuda::measure_device_ceilings(state_->device, state_->stream, state_->cublas);
}

std::unique_ptr<Buffer> CudaBackend::do_allocate(size_t bytes) {
  return std::make_unique<DeviceBuffer>(bytes, state_->registry, state_->stream);
}

namespace {

class PinnedHostBuffer final : public Buffer {
 public:
  explicit PinnedHostBuffer(size_t bytes) : bytes_(bytes) {
    cuda::refuse_in_capture("allocate_host");
    check_cuda(cudaMallocHost(&data_, std::max<size_t>(bytes, 1)), "cudaMallocHost");
    std::memset(data_, 0, std::max<size_t>(bytes, 1));
  }
  ~PinnedHostBuffer() override { cudaFreeHost(data_); }
  PinnedHostBuffer(const PinnedHostBuffer&) = delete;
  PinnedHostBuffer& operator=(const PinnedHostBuffer&) = delete;
  void* data() override { return data_; }
  size_t size() const override { return bytes_; }

 private:
  size_t bytes_;
  void* data_ = nullptr;
};

}  // namespace

std::unique_ptr<Buffer> CudaBackend::do_allocate_host(size_t bytes) {
  return std::make_unique<PinnedHostBuffer>(bytes);
}

TensorView CudaBackend::do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) {
  State& s = *state_;
  const auto row = tensor::row_bytes(type, dims[0]);  // whole blocks: checked by Backend
  const TensorView view{type, dims, static_cast<size_t>(*row), nullptr};
  const auto bytes = static_cast<size_t>(*row) * static_cast<size_t>(view.rows());
  void* device = nullptr;
  cuda::refuse_in_capture("upload_weights");
  cuda::advance_allocation_epoch();
  const cudaError_t status = cudaMalloc(&device, std::max<size_t>(bytes, 1));
  if (status != cudaSuccess) {
    cudaGetLastError();
    fail("upload_weights: {} bytes of device memory: {}", bytes, cudaGetErrorString(status));
  }
  s.registry->add(device, std::max<size_t>(bytes, 1));
  s.weights.push_back(device);
  s.stager->copy(device, host_data, bytes);
  TensorView uploaded = view;
  uploaded.data = device;
  return uploaded;
}

void CudaBackend::do_copy_from_host(const float* src, TensorView& dst) {
  State& s = *state_;
  cuda::refuse_in_capture("copy_from_host");
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  cuda::require_device(s, dst, "copy_from_host", "dst");
  const int64_t rows = dst.rows(), cols = dst.dims[0];
  if (rows == 0 || cols == 0) return;
  const size_t row_in = static_cast<size_t>(cols) * sizeof(float);
  // From pageable memory the copy has left `src` when the call returns: the caller may free it.
  check_cuda(cudaMemcpy2DAsync(dst.data, dst.row_bytes, src, row_in, row_in, static_cast<size_t>(rows),
                               cudaMemcpyHostToDevice, s.stream),
             "cudaMemcpy2DAsync");
}

void CudaBackend::do_copy_to_host(const TensorView& src, float* dst) {
  State& s = *state_;
  cuda::refuse_in_capture("copy_to_host");
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  cuda::require_device(s, src, "copy_to_host", "src");
  const int64_t rows = src.rows(), cols = src.dims[0];
  if (rows == 0 || cols == 0) return;
  const size_t row_out = static_cast<size_t>(cols) * sizeof(float);
  if (src.type == tensor::DType::F32) {
    check_cuda(cudaMemcpy2DAsync(dst, row_out, src.data, src.row_bytes, row_out,
                                 static_cast<size_t>(rows), cudaMemcpyDeviceToHost, s.stream),
               "cudaMemcpy2DAsync");
  } else {
    cuda::require_rows_type(src.type, "copy_to_host");
    auto* f32 =
        static_cast<float*>(s.rows_f32.ensure(row_out * static_cast<size_t>(rows), s.stream));
    cuda::launch_get_rows(src.type, src.data, src.row_bytes, cols, nullptr, rows, f32, cols,
                          s.stream);
    s.check_launch("copy_to_host");
    check_cuda(cudaMemcpyAsync(dst, f32, row_out * static_cast<size_t>(rows),
                               cudaMemcpyDeviceToHost, s.stream),
               "cudaMemcpyAsync");
  }
  synchronize();
}

void CudaBackend::do_get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) {
  State& s = *state_;
  const auto n = static_cast<int64_t>(ids.size());
  cuda::require_rows_type(table.type, "get_rows");
  cuda::require_device(s, table, "get_rows", "table");
  cuda::require_device(s, out, "get_rows", "out");
  if (n == 0) return;
  // Inside a step the ids are the step's tokens or logit rows, already on the device.
  const int32_t* device_ids = s.step->device_indices(ids);
  if (device_ids == nullptr) {
    device_ids = static_cast<const int32_t*>(s.uploads->upload(cuda::HostUploads::kIds, ids.data(), ids.size_bytes()));
  }
  cuda::launch_get_rows(table.type, table.data, table.row_bytes, table.dims[0], device_ids, n,
                        static_cast<float*>(out.data), cuda::stride_of(out), s.stream);
  s.check_launch("get_rows");
}

bool CudaBackend::do_has_op(OpKind op) const {
  return (op == OpKind::AddRmsNorm && state_->options.fused_add_rms_norm) ||
         (op == OpKind::RopeStoreKv && state_->options.fused_rope_store_kv) ||
         ((op == OpKind::RouteExperts || op == OpKind::MoeFfnRouted) && state_->options.routed_moe);
}

void CudaBackend::upload(void* device_dst, const void* host_src, size_t bytes) {
  cuda::refuse_in_capture("upload");
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  check_cuda(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, state_->stream),
             "cudaMemcpyAsync");
  synchronize();
}

void CudaBackend::download(void* host_dst, const void* device_src, size_t bytes) {
  cuda::refuse_in_capture("download");
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  check_cuda(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, state_->stream),
             "cudaMemcpyAsync");
  synchronize();
}

void CudaBackend::synchronize() {
  cuda::refuse_in_capture("waiting for the device");
  cuda::release_op_hold();
  check_cuda(cudaStreamSynchronize(state_->stream), "cudaStreamSynchronize");
}

}  // namespace lumen::backend
