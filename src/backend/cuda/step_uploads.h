#pragma once
// Internal to the CUDA backend: a step's host metadata in device memory (the step boundary,
// backend/backend.h). begin() packs the token ids, positions, logit rows and each layer group's
// slot mapping (the cache row every token's K/V goes to) into one pinned buffer and sends it in
// one asynchronous copy; the step's ops then find the device copy of the arrays they are given
// by address, with no upload, allocation or synchronization of their own. The buffers only grow,
// and only in begin(): after the first step of the largest shape, a step allocates nothing.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>
#include <vector>

#include "backend/backend_types.h"
#include "backend/cuda/device_memory.h"

namespace lumen::backend::cuda {

class StepUploads {
 public:
  explicit StepUploads(cudaStream_t stream) : stream_(stream) {}
  ~StepUploads();
  StepUploads(const StepUploads&) = delete;
  StepUploads& operator=(const StepUploads&) = delete;

  void begin(const StepMetadata& step);
  void end() { open_ = false; }

  // The device copy of host array `values` when it lies inside one of the step's arrays (token
  // ids, positions, logit rows); null otherwise (or outside a step).
  const int32_t* device_indices(std::span<const int32_t> values) const;
  // The slot mapping of `seqs` when they are one whole layer group of the step's sequences and
  // the cache has the step's block size and the batch its n_rows; null otherwise.
  const int64_t* slot_mapping(std::span<const SequenceSlice> seqs, int64_t block_size, int64_t n_rows) const;
  // The step's logits in device memory (rows of the step's logit_width floats).
  float* logits() const { return static_cast<float*>(logits_.data()); }

 private:
  struct Array {
    const int32_t* host = nullptr;
    size_t count = 0;
    size_t offset = 0;  // bytes into the device buffer
  };
  cudaStream_t stream_;
  bool open_ = false;
  StepMetadata step_;
  std::vector<Array> arrays_;          // tokens, positions, logit rows
  std::vector<size_t> group_offsets_;  // per layer group: its slot mapping's bytes offset
  std::vector<uint8_t> packed_;        // host staging before the pinned copy
  PinnedBuffer pinned_;
  DeviceScratch device_;
  DeviceScratch logits_;
  cudaEvent_t copied_ = nullptr;  // the last copy out of pinned_
};

}  // namespace lumen::backend::cuda
