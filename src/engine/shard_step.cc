#include "engine/shard_step.h"

#include <cstring>
#include <type_traits>

#include "util/error.h"

namespace lumen::engine {

namespace {

enum class Op : uint8_t { ZeroBlock = 1, SwapOut, CopyBlock, SwapIn, ShiftKeys, CopyPosition, Forward };

// Reads what ShardStepWriter wrote, refusing to run past the end.
class Reader {
 public:
  explicit Reader(std::span<const std::byte> bytes) : bytes_(bytes) {}
  bool done() const { return at_ == bytes_.size(); }

  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    need(sizeof(T));
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof(T));
    at_ += sizeof(T);
    return value;
  }

  // A length-prefixed array, appended to `out`; returns where it starts there.
  template <typename T>
  size_t get_span(std::vector<T>& out) {
    const auto n = get<uint64_t>();
    if (n > (bytes_.size() - at_) / sizeof(T)) fail("model-parallel step: an array of {} runs past the message", n);
    const size_t first = out.size();
    out.resize(first + n);
    if (n > 0) std::memcpy(out.data() + first, bytes_.data() + at_, n * sizeof(T));  // (no null pointers)
    at_ += n * sizeof(T);
    return first;
  }

 private:
  void need(size_t n) const {
    if (n > bytes_.size() - at_) fail("model-parallel step: the message ends in the middle of an op");
  }
  std::span<const std::byte> bytes_;
  size_t at_ = 0;
};

// A forward pass's batch as the message holds it, with storage for the spans it hands out.
struct DecodedBatch {
  std::vector<int32_t> tokens, positions, tables, logit_rows;
  std::vector<uint8_t> masks;
  struct Slice {
    int64_t first_token, n_tokens, start_pos;
    size_t table_at, table_len, mask_at, mask_len;
    bool has_positions;
  };
  std::vector<Slice> raw;
  std::vector<backend::SequenceSlice> slices;

  void read(Reader& in) {
    in.get_span(tokens);
    in.get_span(positions);
    if (positions.size() != tokens.size()) fail("model-parallel step: {} positions for {} tokens", positions.size(), tokens.size());
    const auto n = in.get<uint64_t>();
    for (uint64_t i = 0; i < n; ++i) {
      Slice s{};
      s.first_token = in.get<int64_t>();
      s.n_tokens = in.get<int64_t>();
      s.start_pos = in.get<int64_t>();
      s.table_at = in.get_span(tables);
      s.table_len = tables.size() - s.table_at;
      s.mask_at = in.get_span(masks);
      s.mask_len = masks.size() - s.mask_at;
      s.has_positions = in.get<uint8_t>() != 0;
      const auto total = static_cast<int64_t>(tokens.size());
      if (s.first_token < 0 || s.n_tokens < 0 || s.first_token > total || s.n_tokens > total - s.first_token) {
        fail("model-parallel step: a slice of rows {}..{} in a batch of {}", s.first_token, s.first_token + s.n_tokens,
             total);
      }
      raw.push_back(s);
    }
    // The rows the last pipeline stage sends back to rank 0.
    in.get_span(logit_rows);
    for (int32_t row : logit_rows) {
      if (row < 0 || row >= static_cast<int64_t>(tokens.size())) {
        fail("model-parallel step: logit row {} in a batch of {}", row, tokens.size());
      }
    }
    // Spans only once every vector has its final size.
    for (const Slice& s : raw) {
      backend::SequenceSlice slice{s.first_token, s.n_tokens, s.start_pos,
                                   std::span<const int32_t>(tables).subspan(s.table_at, s.table_len),
                                   std::span<const uint8_t>(masks).subspan(s.mask_at, s.mask_len)};
      if (s.has_positions) {
        slice.positions = std::span<const int32_t>(positions).subspan(static_cast<size_t>(s.first_token),
                                                                       static_cast<size_t>(s.n_tokens));
      }
      slices.push_back(slice);
    }
  }
};

// The host memory of a swap slot named by a message, checked: a slot past the swap space would
// be written out of bounds.
uint8_t* swap_slot(ShardTarget& target, int32_t slot) {
  if (target.swap == nullptr) fail("model-parallel step: a swap without a swap space");
  if (slot < 0 || slot >= target.swap->n_slots()) {
    fail("model-parallel step: swap slot {} of {}", slot, target.swap->n_slots());
  }
  return target.swap->slot_data(slot);
}

}  // namespace

template <typename T>
void ShardStepWriter::put(T value) {
  static_assert(std::is_trivially_copyable_v<T>);
  const size_t at = bytes_.size();
  bytes_.resize(at + sizeof(T));
  std::memcpy(bytes_.data() + at, &value, sizeof(T));
}

template <typename T>
void ShardStepWriter::put_span(std::span<const T> values) {
  put<uint64_t>(values.size());
  const size_t at = bytes_.size();
  bytes_.resize(at + values.size_bytes());
  if (!values.empty()) std::memcpy(bytes_.data() + at, values.data(), values.size_bytes());
}

void ShardStepWriter::zero_block(int64_t block) {
  put(Op::ZeroBlock);
  put(block);
}

void ShardStepWriter::swap_out(int64_t block, int32_t slot) {
  put(Op::SwapOut);
  put(block);
  put(slot);
}

void ShardStepWriter::copy_block(int64_t src, int64_t dst) {
  put(Op::CopyBlock);
  put(src);
  put(dst);
}

void ShardStepWriter::swap_in(int64_t block, int32_t slot) {
  put(Op::SwapIn);
  put(block);
  put(slot);
}

void ShardStepWriter::shift_keys(std::span<const int32_t> blocks, int32_t delta) {
  put(Op::ShiftKeys);
  put_span(blocks);
  put(delta);
}

void ShardStepWriter::copy_position(int64_t src_block, int64_t src_slot, int64_t dst_block, int64_t dst_slot) {
  put(Op::CopyPosition);
  put(src_block);
  put(src_slot);
  put(dst_block);
  put(dst_slot);
}

void ShardStepWriter::forward(const model::ForwardBatch& batch) {
  put(Op::Forward);
  put_span(batch.tokens);
  put_span(batch.positions);
  put<uint64_t>(batch.sequences.size());
  for (const backend::SequenceSlice& s : batch.sequences) {
    // Images do not run under tensor or pipeline parallelism (Engine::add_request_n refuses them).
    if (!s.key_ends.empty()) fail("model-parallel step: spans that attend both ways are not sent to other ranks");
    put(s.first_token);
    put(s.n_tokens);
    put(s.start_pos);
    put_span(s.block_table);
    put_span(s.visible);
    put<uint8_t>(s.positions.empty() ? 0 : 1);
  }
  put_span(batch.logit_rows);
}

void apply_shard_step(std::span<const std::byte> step, ShardTarget& target) {
  Reader in(step);
  model::KvCache& cache = target.cache;
  std::vector<int32_t> blocks;
  while (!in.done()) {
    switch (in.get<Op>()) {
      case Op::ZeroBlock:
        cache.zero_block(in.get<int64_t>());
        break;
      case Op::SwapOut: {
        const auto block = in.get<int64_t>();
        cache.read_block(block, swap_slot(target, in.get<int32_t>()));
        break;
      }
      case Op::CopyBlock: {
        const auto src = in.get<int64_t>();
        cache.copy_block(src, in.get<int64_t>());
        break;
      }
      case Op::SwapIn: {
        const auto block = in.get<int64_t>();
        cache.write_block(block, swap_slot(target, in.get<int32_t>()));
        break;
      }
      case Op::ShiftKeys: {
        blocks.clear();
        in.get_span(blocks);
        target.transformer.shift_keys(cache, blocks, in.get<int32_t>());
        break;
      }
      case Op::CopyPosition: {
        const auto src_block = in.get<int64_t>();
        const auto src_slot = in.get<int64_t>();
        const auto dst_block = in.get<int64_t>();
        cache.copy_position(src_block, src_slot, dst_block, in.get<int64_t>());
        break;
      }
      case Op::Forward: {
        DecodedBatch batch;
        batch.read(in);
        target.transformer.forward({batch.tokens, batch.positions, batch.slices, batch.logit_rows}, cache, nullptr);
        break;
      }
      default:
        fail("model-parallel step: unknown op");
    }
  }
}

}  // namespace lumen::engine
