#include "backend/cuda/step_uploads.h"

#include <algorithm>
#include <cstring>

#include "backend/common/kv_checks.h"
#include "backend/cuda/decode_attention.h"
#include "backend/cuda/upload_blob.h"

namespace lumen::backend::cuda {

namespace {

// One query row per sequence in every layer group, with plain causal masks (no token tree).
bool is_decode(const StepMetadata& step) {
  if (step.sequences.empty()) return false;
  return std::all_of(step.sequences.begin(), step.sequences.end(), [](const SequenceSlice& seq) {
    return seq.n_tokens == 1 && !has_row_masks(seq) && seq.positions.empty();
  });
}

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
  decode_offsets_.clear();
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
        // A slice whose table does not reach the row has no cache there (an encoder's, which
        // attends to its own rows and keeps nothing): no row, as for one no sequence owns.
        const auto block = static_cast<size_t>((seq.start_pos + i) / step.block_size);
        if (t < n_tokens && block < seq.block_table.size()) {
          rows[t] = common::kv_row(seq, seq.start_pos + i, step.block_size);
        }
      }
    }
  }
  decode_ = decode_tables_ && groups > 0 && is_decode(step);
  if (decode_) bytes = pack_decode_tables(bytes);
  bytes = pack_leading_requests(bytes);  // after all the rest: a replayed step's layout is unchanged
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
    if (step.argmax != nullptr) argmax_.ensure(step.logit_rows.size() * sizeof(DeviceRowArgmax), stream_);
    if (!leading_rows_.empty()) {
      leading_.ensure(leading_rows_.size() * sizeof(DeviceRowLeading), stream_);
      leading_host_.ensure(leading_rows_.size() * sizeof(DeviceRowLeading));
    }
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

size_t StepUploads::pack_decode_tables(size_t bytes) {
  int64_t max_position = 0;
  for (const SequenceSlice& seq : step_.sequences) max_position = std::max(max_position, seq.start_pos);
  max_splits_ = decode_split_bound(max_position);
  // Enough entries for every key under the split bound, so the stride is the shape's alone.
  table_stride_ = (static_cast<int64_t>(max_splits_) * kSplitKeys + step_.block_size - 1) / step_.block_size;
  const size_t per_group = step_.sequences.size() / group_offsets_.size();
  const size_t seqs_bytes = align16(per_group * sizeof(AttentionSeq));
  const size_t table_bytes = align16(per_group * static_cast<size_t>(table_stride_) * sizeof(int32_t));
  for (size_t g = 0; g < group_offsets_.size(); ++g) {
    decode_offsets_.push_back(bytes);
    packed_.resize(bytes + seqs_bytes + table_bytes, 0);
    for (size_t i = 0; i < per_group; ++i) {
      const SequenceSlice& seq = step_.sequences[g * per_group + i];
      const AttentionSeq record{seq.first_token, seq.start_pos, static_cast<int64_t>(i) * table_stride_};
      std::memcpy(packed_.data() + bytes + i * sizeof(AttentionSeq), &record, sizeof(record));
      const size_t entries = std::min(seq.block_table.size(), static_cast<size_t>(table_stride_));
      if (entries != 0) {
        std::memcpy(packed_.data() + bytes + seqs_bytes + i * static_cast<size_t>(table_stride_) * sizeof(int32_t),
                    seq.block_table.data(), entries * sizeof(int32_t));
      }
    }
    bytes += seqs_bytes + table_bytes;
  }
  return bytes;
}

size_t StepUploads::pack_leading_requests(size_t bytes) {
  leading_rows_.clear();
  if (step_.leading == nullptr || step_.logits == nullptr) return bytes;
  for (size_t r = 0; r < step_.row_forms.size(); ++r) {
    if (step_.row_forms[r] == static_cast<uint8_t>(RowForm::Leading)) leading_rows_.push_back(static_cast<int32_t>(r));
  }
  if (leading_rows_.empty()) return bytes;
  leading_offset_ = bytes;
  packed_.resize(bytes + align16(leading_rows_.size() * sizeof(DeviceLeadingRequest)), 0);
  for (size_t i = 0; i < leading_rows_.size(); ++i) {
    const auto r = static_cast<size_t>(leading_rows_[i]);
    const DeviceLeadingRequest request{leading_rows_[i], step_.leading_scale.empty() ? 0.0f : step_.leading_scale[r]};
    std::memcpy(packed_.data() + bytes + i * sizeof(DeviceLeadingRequest), &request, sizeof(request));
  }
  return bytes + align16(leading_rows_.size() * sizeof(DeviceLeadingRequest));
}

int64_t StepUploads::group_of(std::span<const SequenceSlice> seqs) const {
  if (!open_ || group_offsets_.empty() || seqs.empty()) return -1;
  const size_t per_group = step_.sequences.size() / group_offsets_.size();
  const SequenceSlice* first = step_.sequences.data();
  if (seqs.size() != per_group || seqs.data() < first || seqs.data() >= first + step_.sequences.size()) return -1;
  const auto index = static_cast<size_t>(seqs.data() - first);
  if (index % per_group != 0) return -1;
  return static_cast<int64_t>(index / per_group);
}

const int64_t* StepUploads::slot_mapping(std::span<const SequenceSlice> seqs, int64_t block_size,
                                         int64_t n_rows) const {
  if (block_size != step_.block_size || static_cast<size_t>(n_rows) != step_.tokens.size()) return nullptr;
  const int64_t group = group_of(seqs);
  if (group < 0) return nullptr;
  return reinterpret_cast<const int64_t*>(static_cast<const uint8_t*>(device_.data()) +
                                          group_offsets_[static_cast<size_t>(group)]);
}

std::optional<DecodeTables> StepUploads::decode_tables(std::span<const SequenceSlice> seqs, int64_t block_size) const {
  if (!decode_ || block_size != step_.block_size) return std::nullopt;
  const int64_t group = group_of(seqs);
  if (group < 0) return std::nullopt;
  const auto* base = static_cast<const uint8_t*>(device_.data()) + decode_offsets_[static_cast<size_t>(group)];
  DecodeTables tables;
  tables.seqs = reinterpret_cast<const AttentionSeq*>(base);
  tables.tables = reinterpret_cast<const int32_t*>(base + align16(seqs.size() * sizeof(AttentionSeq)));
  tables.n_seqs = static_cast<int32_t>(seqs.size());
  tables.max_splits = max_splits_;
  return tables;
}

std::optional<StepShape> StepUploads::replay_shape() const {
  if (!open_ || !decode_) return std::nullopt;
  StepShape shape;
  shape.tokens = static_cast<int64_t>(step_.tokens.size());
  shape.logit_rows = static_cast<int64_t>(step_.logit_rows.size());
  shape.logit_width = step_.logits != nullptr ? step_.logit_width : 0;
  shape.groups = static_cast<int64_t>(group_offsets_.size());
  shape.seqs_per_group = static_cast<int64_t>(step_.sequences.size() / group_offsets_.size());
  shape.block_size = step_.block_size;
  shape.max_splits = max_splits_;
  shape.model = reinterpret_cast<uintptr_t>(step_.model);
  shape.kv_cache = reinterpret_cast<uintptr_t>(step_.kv_cache);
  return shape;
}

}  // namespace lumen::backend::cuda
