#include "model/context_chunks.h"

#include "util/error.h"

namespace lumen::model {

namespace {

int64_t chunk_start(int64_t chunk, int64_t n_rows, int size) { return chunk * n_rows / (2 * int64_t{size}); }

RowRange chunk(int64_t index, int64_t n_rows, int size) {
  const int64_t first = chunk_start(index, n_rows, size);
  return {first, chunk_start(index + 1, n_rows, size) - first};
}

}  // namespace

ContextChunks context_chunks(int64_t n_rows, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) fail("context parallelism: rank {} of {}", rank, size);
  if (n_rows < 2 * int64_t{size}) {
    fail("context parallelism: {} rows cannot give each of {} ranks its two chunks", n_rows, size);
  }
  return {chunk(rank, n_rows, size), chunk(2 * int64_t{size} - 1 - rank, n_rows, size)};
}

int context_rank_of_row(int64_t row, int64_t n_rows, int size) {
  if (row < 0 || row >= n_rows) fail("context parallelism: row {} of {}", row, n_rows);
  // The chunk holding `row`: the last whose start is at or before it.
  int64_t index = row * 2 * size / n_rows;
  while (index + 1 < 2 * int64_t{size} && chunk_start(index + 1, n_rows, size) <= row) ++index;
  while (chunk_start(index, n_rows, size) > row) --index;
  return static_cast<int>(index < size ? index : 2 * int64_t{size} - 1 - index);
}

}  // namespace lumen::model
