#include "backend/cuda/step_uploads.h"

#include <cstring>

#include "backend/common/kv_checks.h"

namespace lumen::backend::cuda {

namespace {

size_t align16(size_t n) { return (n + 15) & ~size_t{15}; }

}  // namespace

StepUploads::~StepUploads() {
  if (copied_ != nullptr) {
    cudaEventSynchronize(copied_);
    cudaEventDestroy(copied_);
  }
}

void StepUploads::begin(const StepMetadata& step) {
  step_ = step;
  arrays_.clear();
  group_offsets_.clear();
  size_t bytes = 0;
  for (std::span<const int32_t> a : {step.tokens, step.positions, step.logit_rows}) {
    arrays_.push_back({a.data(), a.size(), bytes});
    bytes = align16(bytes + a.size_bytes());
  }
  const size_t n_tokens = step.tokens.size();
  const size_t groups = step.block_size > 0 ? step.sequence_groups : 0;
  for (size_t g = 0; g < groups; ++g) {
    group_offsets_.push_back(bytes);
    bytes = align16(bytes + n_tokens * sizeof(int64_t));
  }
  packed_.assign(bytes, 0);
  for (const Array& a : arrays_) {
    if (a.count != 0) std::memcpy(packed_.data() + a.offset, a.host, a.count * sizeof(int32_t));
  }
  const size_t per_group = groups == 0 ? 0 : step.sequences.size() / groups;
  for (size_t g = 0; g < groups; ++g) {
    // Token t's cache row, or -1 for a row no sequence of the group owns (store_kv skips it).
    auto* rows = reinterpret_cast<int64_t*>(packed_.data() + group_offsets_[g]);
    std::fill(rows, rows + n_tokens, int64_t{-1});
    for (const SequenceSlice& seq : step.sequences.subspan(g * per_group, per_group)) {
      for (int64_t i = 0; i < seq.n_tokens; ++i) {
        const auto t = static_cast<size_t>(seq.first_token + i);
        if (t < n_tokens) rows[t] = common::kv_row(seq, seq.start_pos + i, step.block_size);
      }
    }
  }
  if (copied_ == nullptr) {
    LUMEN_CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
  } else {
    LUMEN_CUDA_CHECK(cudaEventSynchronize(copied_));  // the last step's copy: long finished
  }
  if (bytes != 0) {
    void* staging = pinned_.ensure(bytes);
    std::memcpy(staging, packed_.data(), bytes);
    void* device = device_.ensure(bytes, stream_);
    LUMEN_CUDA_CHECK(cudaMemcpyAsync(device, staging, bytes, cudaMemcpyHostToDevice, stream_));
    LUMEN_CUDA_CHECK(cudaEventRecord(copied_, stream_));
  }
  if (step.logits != nullptr) {
    logits_.ensure(static_cast<size_t>(step.logit_width) * step.logit_rows.size() * sizeof(float), stream_);
  }
  open_ = true;
}

const int32_t* StepUploads::device_indices(std::span<const int32_t> values) const {
  if (!open_ || values.empty()) return nullptr;
  for (const Array& a : arrays_) {
    if (values.data() >= a.host && values.data() + values.size() <= a.host + a.count) {
      const size_t offset = a.offset + static_cast<size_t>(values.data() - a.host) * sizeof(int32_t);
      return reinterpret_cast<const int32_t*>(static_cast<const uint8_t*>(device_.data()) + offset);
    }
  }
  return nullptr;
}

const int64_t* StepUploads::slot_mapping(std::span<const SequenceSlice> seqs, int64_t block_size,
                                         int64_t n_rows) const {
  if (!open_ || group_offsets_.empty() || block_size != step_.block_size || seqs.empty() ||
      static_cast<size_t>(n_rows) != step_.tokens.size()) {
    return nullptr;
  }
  const size_t per_group = step_.sequences.size() / group_offsets_.size();
  const SequenceSlice* first = step_.sequences.data();
  if (seqs.size() != per_group || seqs.data() < first || seqs.data() >= first + step_.sequences.size()) return nullptr;
  const auto index = static_cast<size_t>(seqs.data() - first);
  if (index % per_group != 0) return nullptr;
  return reinterpret_cast<const int64_t*>(static_cast<const uint8_t*>(device_.data()) +
                                          group_offsets_[index / per_group]);
}

}  // namespace lumen::backend::cuda
