#pragma once
// Internal to the CUDA backend: a step's host metadata in device memory (the step boundary,
// backend/backend.h). begin() packs the token ids, positions, logit rows and each layer group's
// slot mapping (the cache row every token's K/V goes to) into one pinned buffer and sends it in
// one asynchronous copy; the step's ops then find the device copy of the arrays they are given
// by address, with no upload, allocation or synchronization of their own. The buffers only grow,
// and only in begin(): after the first step of the largest shape, a step allocates nothing.
//
// With decode tables on (CUDA graphs, step_graphs.h), a decode step (one token per sequence)
// also carries each layer group's sequences and block tables in the layout the plan-free decode
// attention reads (decode_attention.h), block tables padded to one stride, so that every array
// of two steps of the same shape (StepShape) sits at the same device address: a graph recorded
// for one step reads the next one's metadata.
#include <cuda_runtime_api.h>

#include <compare>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "backend/backend_types.h"
#include "backend/cuda/attention_layout.h"
#include "backend/cuda/device_memory.h"
#include "backend/cuda/kernels.h"

namespace lumen::backend::cuda {

// What a decode step's kernels are launched with, beyond its device arrays' contents: steps of
// equal shape run the same launches on the same addresses (one CUDA graph serves them all).
struct StepShape {
  int64_t tokens = 0;
  int64_t logit_rows = 0;
  int64_t logit_width = 0;  // 0: the step returns no logits
  int64_t groups = 0;
  int64_t seqs_per_group = 0;
  int64_t block_size = 0;
  int64_t max_splits = 0;  // decode attention's split bound (decode_split_bound)
  // The rows' argmax launched at the end of the step's ops (CudaBackend's step boundary): a
  // recording with that launch serves only the steps that ask it.
  bool argmax = false;
  // StepMetadata::model and kv_cache: a recording names their memory, so it replays for them alone.
  uintptr_t model = 0;
  uintptr_t kv_cache = 0;
  auto operator<=>(const StepShape&) const = default;
};

// A layer group's decode sequences on the device (AttentionSeq::table_offset indexes tables).
struct DecodeTables {
  const AttentionSeq* seqs = nullptr;
  const int32_t* tables = nullptr;
  int32_t n_seqs = 0;
  int32_t max_splits = 0;
};

class StepUploads {
 public:
  explicit StepUploads(cudaStream_t stream) : stream_(stream) {}
  ~StepUploads();
  StepUploads(const StepUploads&) = delete;
  StepUploads& operator=(const StepUploads&) = delete;

  void begin(const StepMetadata& step);
  void end() { open_ = false; }
  // Whether begin() lays out decode steps for the plan-free decode attention (off by default).
  void set_decode_tables(bool on) { decode_tables_ = on; }

  // The open step's shape, for a step laid out with decode tables (the only ones whose launches
  // a recording can replay); nullopt for the others.
  std::optional<StepShape> replay_shape() const;

  // The device copy of host array `values` when it lies inside one of the step's arrays (token
  // ids, positions, logit rows); null otherwise (or outside a step).
  const int32_t* device_indices(std::span<const int32_t> values) const;
  // The slot mapping of `seqs` when they are one whole layer group of the step's sequences and
  // the cache has the step's block size and the batch its n_rows; null otherwise.
  const int64_t* slot_mapping(std::span<const SequenceSlice> seqs, int64_t block_size, int64_t n_rows) const;
  // The decode tables of `seqs` when they are one whole layer group of a decode step laid out
  // for the plan-free decode attention and the cache has the step's block size; nullopt
  // otherwise.
  std::optional<DecodeTables> decode_tables(std::span<const SequenceSlice> seqs, int64_t block_size) const;
  // The step's logits in device memory (rows of the step's logit_width floats).
  float* logits() const { return static_cast<float*>(logits_.data()); }
  // Where the step's rows reduce to their argmax (StepMetadata::argmax), one entry per logit row.
  DeviceRowArgmax* argmax() const { return static_cast<DeviceRowArgmax*>(argmax_.data()); }
  // The step's Leading rows (StepMetadata::row_forms), in row order: their indices among the
  // logit rows (host), their requests for row_leading.cu (device, uploaded with the rest) and
  // where their reductions go (device), one entry per Leading row.
  std::span<const int32_t> leading_rows() const { return leading_rows_; }
  const DeviceLeadingRequest* leading_requests() const {
    return reinterpret_cast<const DeviceLeadingRequest*>(static_cast<const uint8_t*>(device_.data()) + leading_offset_);
  }
  DeviceRowLeading* leading() const { return static_cast<DeviceRowLeading*>(leading_.data()); }
  // Page-locked host memory the reductions come back into, before they go to their rows.
  DeviceRowLeading* leading_host() const { return static_cast<DeviceRowLeading*>(leading_host_.data()); }

 private:
  struct Array {
    const int32_t* host = nullptr;
    size_t count = 0;
    size_t offset = 0;  // bytes into the device buffer
  };
  // The group of step_.sequences that `seqs` is, whole; -1 when it is none.
  int64_t group_of(std::span<const SequenceSlice> seqs) const;
  // Packs the decode tables after `bytes` into packed_ (grown); returns the new size.
  size_t pack_decode_tables(size_t bytes);
  // Packs the Leading rows' requests after `bytes` (leading_offset_); returns the new size.
  size_t pack_leading_requests(size_t bytes);

  cudaStream_t stream_;
  bool open_ = false;
  bool decode_tables_ = false;
  bool decode_ = false;                 // the open step is laid out for the decode attention
  int32_t max_splits_ = 0;              // its split bound
  int64_t table_stride_ = 0;            // block table entries per sequence
  std::vector<size_t> decode_offsets_;  // per layer group: its AttentionSeq array, then its tables
  StepMetadata step_;
  std::vector<Array> arrays_;          // tokens, positions, logit rows
  std::vector<size_t> group_offsets_;  // per layer group: its slot mapping's bytes offset
  std::vector<uint8_t> packed_;        // host staging before the pinned copy
  PinnedBuffer pinned_;
  DeviceScratch device_;
  DeviceScratch logits_;
  DeviceScratch argmax_;
  std::vector<int32_t> leading_rows_;
  size_t leading_offset_ = 0;
  DeviceScratch leading_;
  PinnedBuffer leading_host_;
  cudaEvent_t copied_ = nullptr;  // the last copy out of pinned_
};

}  // namespace lumen::backend::cuda
