#pragma once
// Backend::shift_keys (context shift) composed from a backend's own public ops, for a backend
// without a kernel of its own (CUDA), correct as far as those ops are (the conformance table
// checks each on every backend):
//
//   1. get_rows: the blocks' key rows and value rows, widened to f32 (the cache as a table);
//   2. rope: every key rotated by `delta` positions (rotations compose, R(p + delta) =
//      R(delta) R(p)), with the magnitude at 1 (YaRN's and the file's factor were applied once,
//      when the key was stored); a rotated cache's keys go back to the rope basis first and
//      are rotated again after (rotate_heads);
//   3. store_kv: the rows written back to where they were, each block its own sequence; the
//      values, read and written unchanged, round-trip exactly.
//
// The CPU's kernel normalizes its cos/sin pairs to length 1 instead of computing them at
// magnitude 1, so the two differ by a float rounding before the cache's own. Called between
// steps (the scheduler's context shift), so its host arrays (rows, positions, block tables)
// are uploaded per op. Scratch grows to the most rows seen.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"

namespace lumen::backend::common {

class ComposedShiftKeys {
 public:
  // Backend::shift_keys's contract (arguments checked by it); throws lumen::Error for a cache
  // whose values are a view of its keys (latent attention), before anything is written.
  void run(Backend& backend, KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
           int64_t head_dim);

 private:
  int64_t rows_ = 0, key_cols_ = 0, value_cols_ = 0;  // capacities
  std::unique_ptr<Buffer> keys_, values_;
  std::vector<int32_t> cache_rows_, positions_;
  std::vector<SequenceSlice> slices_;
};

}  // namespace lumen::backend::common
