#pragma once
// The host side of the simulated device (cuda_sim.h): the CUDA runtime and cuBLAS calls the
// backend's .cc files make, over host memory. Every operation runs when it is queued (streams are
// names; a wait waits for nothing), except while a stream is captured into a graph: then launches,
// device copies, fills and GEMMs are written down with their arguments and run when the graph is
// launched, as a replay would, and what a capture cannot hold (a copy to or from memory the device
// did not allocate, a wait) fails the capture as the driver does.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
};
enum cudaMemoryType {
  cudaMemoryTypeUnregistered = 0,
  cudaMemoryTypeHost = 1,
  cudaMemoryTypeDevice = 2,
  cudaMemoryTypeManaged = 3
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};
enum cudaStreamCaptureMode {
  cudaStreamCaptureModeGlobal = 0,
  cudaStreamCaptureModeThreadLocal = 1,
  cudaStreamCaptureModeRelaxed = 2
};
inline constexpr unsigned cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0;
inline constexpr unsigned cudaEventDisableTiming = 2;
inline constexpr unsigned cudaHostAllocDefault = 0;
inline constexpr unsigned cudaHostAllocMapped = 2;

struct CUevent_st;
using cudaEvent_t = CUevent_st*;
struct CUgraph_st;
using cudaGraph_t = CUgraph_st*;
struct CUgraphExec_st;
using cudaGraphExec_t = CUgraphExec_st*;

struct cudaDeviceProp {
  char name[256];
  int major;
  int minor;
  int multiProcessorCount;
  size_t totalGlobalMem;
  size_t sharedMemPerBlock;
  size_t sharedMemPerBlockOptin;
  int l2CacheSize;
  int memoryBusWidth;
  int warpSize;
  int maxThreadsPerBlock;
};

const char* cudaGetErrorString(cudaError_t error);
const char* cudaGetErrorName(cudaError_t error);
cudaError_t cudaGetDeviceCount(int* count);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device);
cudaError_t cudaDeviceSynchronize();
cudaError_t cudaMemGetInfo(size_t* free, size_t* total);

cudaError_t cudaMalloc(void** p, size_t bytes);
cudaError_t cudaFree(void* p);
cudaError_t cudaMallocHost(void** p, size_t bytes);
cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned flags);
cudaError_t cudaFreeHost(void* p);
cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned flags);
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* p);

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind,
                            cudaStream_t stream = nullptr);
cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              cudaMemcpyKind kind, cudaStream_t stream = nullptr);
cudaError_t cudaMemset(void* p, int value, size_t bytes);

cudaError_t cudaStreamCreate(cudaStream_t* stream);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned flags);
cudaError_t cudaStreamDestroy(cudaStream_t stream);
cudaError_t cudaStreamSynchronize(cudaStream_t stream);

cudaError_t cudaEventCreate(cudaEvent_t* event);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned flags);
cudaError_t cudaEventDestroy(cudaEvent_t event);
cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream = nullptr);
cudaError_t cudaEventSynchronize(cudaEvent_t event);
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end);

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t* graph);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t* exec, cudaGraph_t graph, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec);
cudaError_t cudaGraphDestroy(cudaGraph_t graph);

cudaError_t cudaProfilerStart();
cudaError_t cudaProfilerStop();

namespace cuda_sim {

// What a piece of queued work is, for the ledger below.
enum class Work : uint8_t { Kernel, CopyToDevice, CopyToHost, CopyOnDevice, Fill, Gemm, Event, Graph };
inline constexpr int kWorkKinds = 8;

// Runs `work` now, or writes it into the graph being captured (the stream argument is ignored:
// the backends capture their one stream). `bytes`: what a copy or fill moves.
void enqueue(Work kind, std::function<void()> work, size_t bytes = 0);

// The ledger (LUMEN_SIM_LEDGER=1: printed as one JSON line on stderr when the process ends): what
// the host queued one call at a time, what it put into recordings, what the device ran (replays
// included), the bytes each way and the host's waits. A step's launches, copies and waits are
// what a GPU run would pay for in host time and latency, whatever the simulation's speed.
struct Ledger {
  uint64_t queued[kWorkKinds] = {};    // by the host, outside captures
  uint64_t recorded[kWorkKinds] = {};  // into captures
  uint64_t ran[kWorkKinds] = {};       // by the device: queued now or replayed
  uint64_t bytes_queued[kWorkKinds] = {};
  uint64_t bytes_ran[kWorkKinds] = {};
  uint64_t waits = 0;        // stream, event and device synchronizations
  uint64_t allocations = 0;  // cudaMalloc, cudaMallocHost and cudaHostAlloc calls
  uint64_t captures = 0, captures_failed = 0;
};
Ledger ledger();  // a snapshot
std::string ledger_json();
// Whether a capture is open; a capture that met something it cannot hold fails at its end.
bool capturing();
void fail_capture();
// Whether p lies in memory cudaMalloc returned.
bool is_device_memory(const void* p);
// LUMEN_SIM_SKIP_KERNELS=1: launches and GEMMs are checked and counted but do not run, so the
// host's own work per step (the backend's and the engine's, not the driver's) can be timed and
// profiled on a CPU; every result is then garbage.
bool kernels_skipped();
// Bytes cudaMemGetInfo reports (LUMEN_CUDA_SIM_MEMORY_MB, 1024 unless set).
size_t device_memory_bytes();

}  // namespace cuda_sim
