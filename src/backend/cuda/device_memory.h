#pragma once
// Device and pinned host memory for the CUDA backend: error checking, grow-only scratch, the
// per-call upload of small host arrays, the staged upload of weights, and a registry that tells
// device pointers from host ones.
#include <cuda_runtime_api.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

namespace lumen::backend::cuda {

// Throws lumen::Error naming `what` and CUDA's message unless status is cudaSuccess.
void check_cuda(cudaError_t status, const char* what);
#define LUMEN_CUDA_CHECK(expr) ::lumen::backend::cuda::check_cuda((expr), #expr)

// Device memory that only grows. Growing waits for `stream` first: kernels queued on it may
// still read the old allocation.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;

  void* ensure(size_t bytes, cudaStream_t stream);
  void* data() const { return data_; }
  // Bytes ensure() gives without growing.
  size_t capacity() const { return data_ != nullptr ? capacity_ : 0; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

// Counts in device memory that kernels leave at 0 after each use (the fused attention combine's
// per item, the GLU epilogue's per slice): zeroed when they grow, which happens outside a
// recording, as every scratch's growth does (a shape's first steps run eagerly).
class ZeroedCounters {
 public:
  // `n` counts, all 0. Growing refuses a recording (graph_capture.h), naming `what`.
  unsigned* ensure(int64_t n, cudaStream_t stream, const char* what);
  // Whether ensure(n) would need to grow them.
  bool would_grow(int64_t n) const { return n > zeroed_; }

 private:
  DeviceScratch counts_;
  int64_t zeroed_ = 0;  // how many are zeroed
};

// Page-locked host memory that only grows (for asynchronous copies).
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* ensure(size_t bytes);
  void* data() const { return data_; }

 private:
  void* data_ = nullptr;
  size_t capacity_ = 0;
};

// Uploads the small host arrays an op needs (positions, block tables, ...) into one device
// buffer per slot, asynchronously on the backend's stream. A model calls the same op with the
// same arrays once per layer, so an array equal to the slot's last upload is not sent again.
// Each slot stages through its own pinned buffer, reused only once its last copy has finished.
class HostUploads {
 public:
  enum Slot {
    kPositions,
    kKvRows,
    kAttentionPlan,
    kIds,
    kFreqFactors,
    kSsmSequences,
    kKvEviction,
    kEncoderRows,
    kRwkvRows,
    kRwkvSequences,
    kPrefillPlan,
    kSlotCount
  };

  explicit HostUploads(cudaStream_t stream) : stream_(stream) {}
  ~HostUploads();
  HostUploads(const HostUploads&) = delete;
  HostUploads& operator=(const HostUploads&) = delete;

  // The device copy of bytes [data, data + bytes), valid for work queued after this call.
  const void* upload(Slot slot, const void* data, size_t bytes);

 private:
  struct Entry {
    std::vector<uint8_t> last;
    bool valid = false;
    DeviceScratch device;
    PinnedBuffer pinned;
    cudaEvent_t copied = nullptr;  // recorded after the copy out of `pinned`
    uint64_t hold = 0;             // the op hold on when it was recorded (op_hold.h)
  };
  cudaStream_t stream_;
  std::array<Entry, kSlotCount> entries_;
};

// Copies weights to the device through two pinned buffers in turn, so copying the next chunk
// from the (memory-mapped) file overlaps the DMA of the previous one.
class WeightStager {
 public:
  explicit WeightStager(cudaStream_t stream) : stream_(stream) {}
  ~WeightStager();
  WeightStager(const WeightStager&) = delete;
  WeightStager& operator=(const WeightStager&) = delete;

  void copy(void* device_dst, const void* host_src, size_t bytes);

 private:
  static constexpr size_t kChunkBytes = size_t{32} << 20;
  cudaStream_t stream_;
  std::array<PinnedBuffer, 2> buffers_;
  std::array<cudaEvent_t, 2> copied_{};
  std::array<bool, 2> pending_{};
  int next_ = 0;
};

// The device allocations a backend made, so ops can tell its pointers from host memory
// without asking the driver each time.
class AllocationRegistry {
 public:
  void add(const void* p, size_t bytes);
  void remove(const void* p);
  // True for memory inside a registered allocation, or that the driver says is device memory.
  bool is_device(const void* p) const;

 private:
  std::map<uintptr_t, size_t> ranges_;
};

}  // namespace lumen::backend::cuda
