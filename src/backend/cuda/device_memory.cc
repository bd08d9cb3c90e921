#include "backend/cuda/device_memory.h"

#include <algorithm>
#include <cstring>

#include "backend/cuda/graph_capture.h"
#include "backend/cuda/op_hold.h"
#include "util/error.h"

namespace lumen::backend::cuda {

void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) {
    fail("CUDA error in {}: {} ({})", what, cudaGetErrorString(status), cudaGetErrorName(status));
  }
}

DeviceScratch::~DeviceScratch() {
  if (data_ != nullptr) {
    cudaFree(data_);
    advance_allocation_epoch();
  }
}

void* DeviceScratch::ensure(size_t bytes, cudaStream_t stream) {
  if (bytes <= capacity_ && data_ != nullptr) return data_;
  refuse_in_capture("growing device scratch");
  advance_allocation_epoch();
  if (data_ != nullptr) {
    release_op_hold();
    LUMEN_CUDA_CHECK(cudaStreamSynchronize(stream));
    LUMEN_CUDA_CHECK(cudaFree(data_));
    data_ = nullptr;
    capacity_ = 0;
  }
  // Some headroom, so a batch that grows by a few tokens at a time does not reallocate each time.
  const size_t want = std::max<size_t>(bytes + bytes / 4, 256);
  LUMEN_CUDA_CHECK(cudaMalloc(&data_, want));
  capacity_ = want;
  return data_;
}

unsigned* ZeroedCounters::ensure(int64_t n, cudaStream_t stream, const char* what) {
  auto* counts = static_cast<unsigned*>(counts_.ensure(static_cast<size_t>(n) * sizeof(unsigned), stream));
  if (n > zeroed_) {
    refuse_in_capture(what);
    LUMEN_CUDA_CHECK(cudaMemsetAsync(counts, 0, static_cast<size_t>(n) * sizeof(unsigned), stream));
    zeroed_ = n;
  }
  return counts;
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

void* PinnedBuffer::ensure(size_t bytes) {
  if (bytes <= capacity_ && data_ != nullptr) return data_;
  refuse_in_capture("growing pinned memory");
  if (data_ != nullptr) {
    release_op_hold();  // freeing page-locked memory waits for the device
    LUMEN_CUDA_CHECK(cudaFreeHost(data_));
  }
  data_ = nullptr;
  capacity_ = 0;
  const size_t want = std::max<size_t>(bytes + bytes / 4, 256);
  LUMEN_CUDA_CHECK(cudaMallocHost(&data_, want));
  capacity_ = want;
  return data_;
}

HostUploads::~HostUploads() {
  for (Entry& e : entries_) {
    if (e.copied != nullptr) {
      cudaEventSynchronize(e.copied);
      cudaEventDestroy(e.copied);
    }
  }
}

const void* HostUploads::upload(Slot slot, const void* data, size_t bytes) {
  // Even an unchanged array: a replay would read whatever the slot holds by then.
  refuse_in_capture("a per-op upload of host arrays");
  Entry& e = entries_[static_cast<size_t>(slot)];
  if (bytes == 0) return nullptr;
  if (e.valid && e.last.size() == bytes && std::memcmp(e.last.data(), data, bytes) == 0) {
    return e.device.data();
  }
  if (e.copied == nullptr) {
    LUMEN_CUDA_CHECK(cudaEventCreateWithFlags(&e.copied, cudaEventDisableTiming));
  } else {
    // Usually an earlier step's copy, long done; one queued under the hold on now waits for it.
    if (e.hold != 0 && e.hold == current_op_hold()) release_op_hold();
    LUMEN_CUDA_CHECK(cudaEventSynchronize(e.copied));  // the pinned buffer is free again
  }
  void* staging = e.pinned.ensure(bytes);
  std::memcpy(staging, data, bytes);
  void* device = e.device.ensure(bytes, stream_);
  LUMEN_CUDA_CHECK(cudaMemcpyAsync(device, staging, bytes, cudaMemcpyHostToDevice, stream_));
  LUMEN_CUDA_CHECK(cudaEventRecord(e.copied, stream_));
  e.hold = current_op_hold();
  const auto* begin = static_cast<const uint8_t*>(data);
  e.last.assign(begin, begin + bytes);
  e.valid = true;
  return device;
}

WeightStager::~WeightStager() {
  for (int i = 0; i < 2; ++i) {
    if (copied_[static_cast<size_t>(i)] != nullptr) {
      cudaEventSynchronize(copied_[static_cast<size_t>(i)]);
      cudaEventDestroy(copied_[static_cast<size_t>(i)]);
    }
  }
}

void WeightStager::copy(void* device_dst, const void* host_src, size_t bytes) {
  const auto* src = static_cast<const uint8_t*>(host_src);
  auto* dst = static_cast<uint8_t*>(device_dst);
  for (size_t done = 0; done < bytes;) {
    const size_t n = std::min(kChunkBytes, bytes - done);
    const auto i = static_cast<size_t>(next_);
    next_ = 1 - next_;
    if (copied_[i] == nullptr) {
      LUMEN_CUDA_CHECK(cudaEventCreateWithFlags(&copied_[i], cudaEventDisableTiming));
    }
    if (pending_[i]) LUMEN_CUDA_CHECK(cudaEventSynchronize(copied_[i]));
    void* staging = buffers_[i].ensure(kChunkBytes);
    std::memcpy(staging, src + done, n);
    LUMEN_CUDA_CHECK(cudaMemcpyAsync(dst + done, staging, n, cudaMemcpyHostToDevice, stream_));
    LUMEN_CUDA_CHECK(cudaEventRecord(copied_[i], stream_));
    pending_[i] = true;
    done += n;
  }
}

void AllocationRegistry::add(const void* p, size_t bytes) {
  ranges_[reinterpret_cast<uintptr_t>(p)] = bytes;
}

void AllocationRegistry::remove(const void* p) { ranges_.erase(reinterpret_cast<uintptr_t>(p)); }

bool AllocationRegistry::is_device(const void* p) const {
  const auto address = reinterpret_cast<uintptr_t>(p);
  auto it = ranges_.upper_bound(address);
  if (it != ranges_.begin()) {
    --it;
    if (address < it->first + it->second) return true;
  }
  cudaPointerAttributes attributes{};
  if (cudaPointerGetAttributes(&attributes, p) != cudaSuccess) {
    cudaGetLastError();  // host memory the driver has never seen: clear the sticky-free error
    return false;
  }
  return attributes.type == cudaMemoryTypeDevice || attributes.type == cudaMemoryTypeManaged;
}

}  // namespace lumen::backend::cuda
