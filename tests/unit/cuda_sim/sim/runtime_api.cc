// runtime_api.h and cublas_v2.h over host memory (see there).
#include "runtime_api.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_sim.h"
#include "include/cublas_v2.h"
#include "tensor/fp16.h"

namespace cuda_sim {
namespace {

constexpr size_t kAlignment = 256;  // what cudaMalloc guarantees

struct Graph {
  std::vector<std::function<void()>> work;
};

// Ledger's counters, atomic: backends may run on several threads.
struct Counters {
  std::atomic<uint64_t> queued[kWorkKinds]{}, recorded[kWorkKinds]{}, ran[kWorkKinds]{};
  std::atomic<uint64_t> bytes_queued[kWorkKinds]{}, bytes_ran[kWorkKinds]{};
  std::atomic<uint64_t> waits{0}, allocations{0}, captures{0}, captures_failed{0};
};

struct State {
  Counters counters;
  std::mutex mutex;                    // the allocation maps (backends on several threads)
  std::map<uintptr_t, size_t> device;  // cudaMalloc'd ranges: start -> bytes
  std::map<uintptr_t, size_t> host;    // cudaMallocHost / cudaHostAlloc
  size_t device_bytes = 0;
  Graph* capture = nullptr;  // the open capture (one stream at a time)
  bool capture_failed = false;
};

void print_ledger_if_asked();

State& state() {
  static State s;
  // Registered after s is built, so it runs before s is destroyed.
  [[maybe_unused]] static const bool printer = std::atexit(print_ledger_if_asked) == 0;
  return s;
}

bool in_range(const std::map<uintptr_t, size_t>& ranges, const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto it = ranges.upper_bound(at);
  if (it == ranges.begin()) return false;
  --it;
  return at < it->first + std::max<size_t>(it->second, 1);
}

void* allocate(size_t bytes) {
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlignment - 1) / kAlignment * kAlignment;
  return std::aligned_alloc(kAlignment, rounded);
}

}  // namespace

void enqueue(Work kind, std::function<void()> work, size_t bytes) {
  State& s = state();
  Counters& c = s.counters;
  const auto k = static_cast<size_t>(kind);
  auto counted = [&c, k, bytes, work = std::move(work)] {
    c.ran[k].fetch_add(1, std::memory_order_relaxed);
    c.bytes_ran[k].fetch_add(bytes, std::memory_order_relaxed);
    work();
  };
  if (s.capture != nullptr) {
    c.recorded[k].fetch_add(1, std::memory_order_relaxed);
    s.capture->work.push_back(std::move(counted));
  } else {
    c.queued[k].fetch_add(1, std::memory_order_relaxed);
    c.bytes_queued[k].fetch_add(bytes, std::memory_order_relaxed);
    counted();
  }
}

Ledger ledger() {
  Ledger snapshot;
  const Counters& c = state().counters;
  for (int k = 0; k < kWorkKinds; ++k) {
    snapshot.queued[k] = c.queued[k].load();
    snapshot.recorded[k] = c.recorded[k].load();
    snapshot.ran[k] = c.ran[k].load();
    snapshot.bytes_queued[k] = c.bytes_queued[k].load();
    snapshot.bytes_ran[k] = c.bytes_ran[k].load();
  }
  snapshot.waits = c.waits.load();
  snapshot.allocations = c.allocations.load();
  snapshot.captures = c.captures.load();
  snapshot.captures_failed = c.captures_failed.load();
  return snapshot;
}

std::string ledger_json() {
  static constexpr const char* kNames[kWorkKinds] = {"kernel", "copy_to_device", "copy_to_host", "copy_on_device",
                                                     "fill",   "gemm",           "event",        "graph"};
  const Ledger l = ledger();
  const auto by_kind = [](const uint64_t(&counts)[kWorkKinds]) {
    std::string out = "{";
    for (int k = 0; k < kWorkKinds; ++k) {
      out += (k ? ", \"" : "\"") + std::string(kNames[k]) + "\": " + std::to_string(counts[k]);
    }
    return out + "}";
  };
  return "{\"queued\": " + by_kind(l.queued) + ", \"recorded\": " + by_kind(l.recorded) +
         ", \"ran\": " + by_kind(l.ran) + ", \"bytes_queued\": " + by_kind(l.bytes_queued) +
         ", \"bytes_ran\": " + by_kind(l.bytes_ran) + ", \"waits\": " + std::to_string(l.waits) +
         ", \"allocations\": " + std::to_string(l.allocations) + ", \"captures\": " + std::to_string(l.captures) +
         ", \"captures_failed\": " + std::to_string(l.captures_failed) + "}";
}

bool capturing() { return state().capture != nullptr; }
void fail_capture() { state().capture_failed = true; }

bool is_device_memory(const void* p) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  return in_range(s.device, p);
}

namespace {
void print_ledger_if_asked() {
  const char* asked = std::getenv("LUMEN_SIM_LEDGER");
  if (asked != nullptr && std::strcmp(asked, "0") != 0)
    std::fprintf(stderr, "{\"sim_ledger\": %s}\n", ledger_json().c_str());
}
}  // namespace

bool kernels_skipped() {
  static const bool skipped = [] {
    const char* v = std::getenv("LUMEN_SIM_SKIP_KERNELS");
    return v != nullptr && std::strcmp(v, "0") != 0;
  }();
  return skipped;
}

size_t device_memory_bytes() {
  const char* mb = std::getenv("LUMEN_CUDA_SIM_MEMORY_MB");
  return (mb != nullptr ? std::strtoull(mb, nullptr, 10) : 1024) << 20;
}

}  // namespace cuda_sim

using cuda_sim::state;

const char* cudaGetErrorString(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
  }
  return "unknown error";
}
const char* cudaGetErrorName(cudaError_t error) {
  switch (error) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorStreamCaptureUnsupported: return "cudaErrorStreamCaptureUnsupported";
    case cudaErrorStreamCaptureInvalidated: return "cudaErrorStreamCaptureInvalidated";
  }
  return "cudaErrorUnknown";
}

cudaError_t cudaGetDeviceCount(int* count) {
  *count = 1;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int device) { return device == 0 ? cudaSuccess : cudaErrorInvalidValue; }
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) {
  if (device != 0) return cudaErrorInvalidValue;
  *prop = cudaDeviceProp{};
  std::strncpy(prop->name, "cuda_sim (a CPU simulating an sm_90 device)", sizeof(prop->name) - 1);
  prop->major = 9;
  prop->minor = 0;
  prop->multiProcessorCount = cuda_sim::kMultiprocessors;
  prop->totalGlobalMem = cuda_sim::device_memory_bytes();
  prop->sharedMemPerBlock = 48 << 10;
  prop->sharedMemPerBlockOptin = 227 << 10;
  prop->l2CacheSize = 50 << 20;
  prop->memoryBusWidth = 5120;
  prop->warpSize = 32;
  prop->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
cudaError_t cudaDeviceSynchronize() { return cudaStreamSynchronize(nullptr); }
cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  *total = cuda_sim::device_memory_bytes();
  *free = *total > s.device_bytes ? *total - s.device_bytes : 0;
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t bytes) {
  auto& s = state();
  s.counters.allocations.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(s.mutex);
  if (s.device_bytes + bytes > cuda_sim::device_memory_bytes()) {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
  *p = cuda_sim::allocate(bytes);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  std::memset(*p, 0xcd, bytes);  // not zero: what was never written reads as garbage, as on a GPU
  s.device[reinterpret_cast<uintptr_t>(*p)] = bytes;
  s.device_bytes += bytes;
  return cudaSuccess;
}
cudaError_t cudaFree(void* p) {
  if (p == nullptr) return cudaSuccess;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  const auto it = s.device.find(reinterpret_cast<uintptr_t>(p));
  if (it == s.device.end()) return cudaErrorInvalidValue;
  s.device_bytes -= it->second;
  s.device.erase(it);
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned) {
  auto& s = state();
  s.counters.allocations.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard lock(s.mutex);
  *p = cuda_sim::allocate(bytes);
  if (*p == nullptr) return cudaErrorMemoryAllocation;
  s.host[reinterpret_cast<uintptr_t>(*p)] = bytes;
  return cudaSuccess;
}
cudaError_t cudaMallocHost(void** p, size_t bytes) { return cudaHostAlloc(p, bytes, cudaHostAllocDefault); }
cudaError_t cudaFreeHost(void* p) {
  if (p == nullptr) return cudaSuccess;
  auto& s = state();
  std::lock_guard lock(s.mutex);
  if (s.host.erase(reinterpret_cast<uintptr_t>(p)) == 0) return cudaErrorInvalidValue;
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned) {
  *device = host;  // mapped host memory: the device reads it where it is
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p) {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  *attributes = cudaPointerAttributes{};
  if (cuda_sim::in_range(s.device, p)) {
    attributes->type = cudaMemoryTypeDevice;
    attributes->devicePointer = const_cast<void*>(p);
  } else if (cuda_sim::in_range(s.host, p)) {
    attributes->type = cudaMemoryTypeHost;
    attributes->hostPointer = attributes->devicePointer = const_cast<void*>(p);
  } else {
    attributes->type = cudaMemoryTypeUnregistered;
  }
  return cudaSuccess;
}

namespace {

// A copy inside a capture must be between device allocations: the driver refuses pageable host
// memory there, and the backend must not copy host arrays that change per step into a recording.
cudaError_t copy(void* dst, const void* src, size_t bytes) {
  if (bytes == 0) return cudaSuccess;
  if (cuda_sim::capturing()) {
    if (!cuda_sim::is_device_memory(dst) || !cuda_sim::is_device_memory(src)) {
      cuda_sim::fail_capture();
      return cudaErrorStreamCaptureUnsupported;
    }
  }
  const bool to_device = cuda_sim::is_device_memory(dst), from_device = cuda_sim::is_device_memory(src);
  const cuda_sim::Work kind = to_device && from_device ? cuda_sim::Work::CopyOnDevice
                              : to_device              ? cuda_sim::Work::CopyToDevice
                                                       : cuda_sim::Work::CopyToHost;  // from the device or host to host
  cuda_sim::enqueue(
      kind, [=] { std::memmove(dst, src, bytes); }, bytes);
  return cudaSuccess;
}

}  // namespace

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind) {
  if (cuda_sim::capturing()) {
    cuda_sim::fail_capture();
    return cudaErrorStreamCaptureUnsupported;
  }
  return copy(dst, src, bytes);
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind, cudaStream_t) {
  return copy(dst, src, bytes);
}
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind, cudaStream_t) {
  for (size_t r = 0; r < height; ++r) {
    const cudaError_t e = copy(static_cast<char*>(dst) + r * dpitch, static_cast<const char*>(src) + r * spitch, width);
    if (e != cudaSuccess) return e;
  }
  return cudaSuccess;
}
cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  if (cuda_sim::capturing()) {
    cuda_sim::fail_capture();
    return cudaErrorStreamCaptureUnsupported;
  }
  std::memset(p, value, bytes);
  return cudaSuccess;
}

namespace {
struct StreamTag {};
}  // namespace

cudaError_t cudaStreamCreate(cudaStream_t* stream) { return cudaStreamCreateWithFlags(stream, 0); }
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned) {
  // A distinct address per stream (dependent_launch_streams.h keys on it); never dereferenced.
  *stream = reinterpret_cast<cudaStream_t>(new StreamTag);
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  delete reinterpret_cast<StreamTag*>(stream);
  return cudaSuccess;
}
cudaError_t cudaStreamSynchronize(cudaStream_t) {
  state().counters.waits.fetch_add(1, std::memory_order_relaxed);
  if (cuda_sim::capturing()) {
    cuda_sim::fail_capture();
    return cudaErrorStreamCaptureUnsupported;
  }
  return cudaSuccess;  // everything queued has run
}

namespace {
struct Event {
  std::chrono::steady_clock::time_point at{};
  bool recorded = false;
};
}  // namespace

cudaError_t cudaEventCreate(cudaEvent_t* event) { return cudaEventCreateWithFlags(event, 0); }
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned) {
  *event = reinterpret_cast<cudaEvent_t>(new Event);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t event) {
  delete reinterpret_cast<Event*>(event);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t) {
  auto* e = reinterpret_cast<Event*>(event);
  cuda_sim::enqueue(cuda_sim::Work::Event, [e] {
    e->at = std::chrono::steady_clock::now();
    e->recorded = true;
  });
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaStreamSynchronize(nullptr); }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  const auto* a = reinterpret_cast<Event*>(start);
  const auto* b = reinterpret_cast<Event*>(end);
  if (!a->recorded || !b->recorded) return cudaErrorInvalidValue;
  *ms = std::chrono::duration<float, std::milli>(b->at - a->at).count();
  return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t, cudaStreamCaptureMode) {
  auto& s = state();
  if (s.capture != nullptr) return cudaErrorInvalidValue;
  s.capture = new cuda_sim::Graph;
  s.counters.captures.fetch_add(1, std::memory_order_relaxed);
  s.capture_failed = false;
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t, cudaGraph_t* graph) {
  auto& s = state();
  if (s.capture == nullptr) return cudaErrorInvalidValue;
  cuda_sim::Graph* captured = std::exchange(s.capture, nullptr);
  if (s.capture_failed) {
    s.counters.captures_failed.fetch_add(1, std::memory_order_relaxed);
    delete captured;
    *graph = nullptr;
    return cudaErrorStreamCaptureInvalidated;
  }
  *graph = reinterpret_cast<cudaGraph_t>(captured);
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long) {
  *exec = reinterpret_cast<cudaGraphExec_t>(new cuda_sim::Graph(*reinterpret_cast<cuda_sim::Graph*>(graph)));
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t) {
  const auto* graph = reinterpret_cast<cuda_sim::Graph*>(exec);
  cuda_sim::enqueue(cuda_sim::Work::Graph, [graph] {
    for (const auto& work : graph->work) work();
  });
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec) {
  delete reinterpret_cast<cuda_sim::Graph*>(exec);
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t graph) {
  delete reinterpret_cast<cuda_sim::Graph*>(graph);
  return cudaSuccess;
}

cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }

// ---- cuBLAS ----

struct cublasContext {
  cublasPointerMode_t mode = CUBLAS_POINTER_MODE_HOST;
};

cublasStatus_t cublasCreate(cublasHandle_t* handle) {
  *handle = new cublasContext;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasDestroy(cublasHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}
cublasStatus_t cublasSetStream(cublasHandle_t, cudaStream_t) { return CUBLAS_STATUS_SUCCESS; }
cublasStatus_t cublasSetPointerMode(cublasHandle_t handle, cublasPointerMode_t mode) {
  handle->mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

namespace {

double element(const void* p, cudaDataType type, size_t i) {
  switch (type) {
    case CUDA_R_32F: return static_cast<const float*>(p)[i];
    case CUDA_R_16F: return lumen::tensor::fp16_to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_16BF: return lumen::tensor::bf16_to_float(static_cast<const uint16_t*>(p)[i]);
    case CUDA_R_8I: return static_cast<const int8_t*>(p)[i];
    case CUDA_R_32I: return static_cast<const int32_t*>(p)[i];
  }
  return 0.0;
}

}  // namespace

cublasStatus_t cublasGemmEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, int m, int n,
                            int k, const void* alpha, const void* a, cudaDataType a_type, int lda, const void* b,
                            cudaDataType b_type, int ldb, const void* beta, void* c, cudaDataType c_type, int ldc,
                            cublasComputeType_t, cublasGemmAlgo_t) {
  if ((c_type != CUDA_R_32F && c_type != CUDA_R_32I) || m < 0 || n < 0 || k < 0) return CUBLAS_STATUS_NOT_SUPPORTED;
  const bool integer = c_type == CUDA_R_32I;  // alpha and beta are int32 then
  const bool by_pointer = handle->mode == CUBLAS_POINTER_MODE_DEVICE;
  // Host-mode scalars are read now; device-mode ones when the product runs (as cuBLAS does).
  const auto scalar = [integer](const void* p) {
    return integer ? static_cast<double>(*static_cast<const int32_t*>(p)) : *static_cast<const float*>(p);
  };
  const double alpha_now = by_pointer ? 0.0 : scalar(alpha);
  const double beta_now = by_pointer ? 0.0 : scalar(beta);
  cuda_sim::enqueue(cuda_sim::Work::Gemm, [=] {
    if (cuda_sim::kernels_skipped()) return;
    const double al = by_pointer ? scalar(alpha) : alpha_now;
    const double be = by_pointer ? scalar(beta) : beta_now;
    for (int j = 0; j < n; ++j) {
      for (int i = 0; i < m; ++i) {
        double sum = 0.0;
        for (int l = 0; l < k; ++l) {
          // Column-major: op(A)[i, l] and op(B)[l, j].
          const size_t ai = transa == CUBLAS_OP_N ? static_cast<size_t>(i) + static_cast<size_t>(l) * lda
                                                  : static_cast<size_t>(l) + static_cast<size_t>(i) * lda;
          const size_t bi = transb == CUBLAS_OP_N ? static_cast<size_t>(l) + static_cast<size_t>(j) * ldb
                                                  : static_cast<size_t>(j) + static_cast<size_t>(l) * ldb;
          sum += element(a, a_type, ai) * element(b, b_type, bi);
        }
        const size_t at = static_cast<size_t>(i) + static_cast<size_t>(j) * ldc;
        if (integer) {
          auto& y = static_cast<int32_t*>(c)[at];
          y = static_cast<int32_t>(al * sum + (be != 0.0 ? be * y : 0.0));
        } else {
          auto& y = static_cast<float*>(c)[at];
          y = static_cast<float>(al * sum + (be != 0.0 ? be * y : 0.0));
        }
      }
    }
  });
  return CUBLAS_STATUS_SUCCESS;
}
