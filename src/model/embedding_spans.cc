#include "model/embedding_spans.h"

#include <algorithm>
#include <vector>

#include "util/error.h"

namespace lumen::model {

void check_embedding_spans(std::span<const EmbeddingSpan> spans, int64_t n_rows) {
  if (spans.empty()) return;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  ranges.reserve(spans.size());
  for (const EmbeddingSpan& span : spans) {
    if (span.first_row < 0 || span.n_rows <= 0 || span.first_row > n_rows - span.n_rows) {
      fail("forward: embedding rows [{}, +{}) outside the batch's {} rows", span.first_row, span.n_rows, n_rows);
    }
    if (span.values == nullptr) fail("forward: embedding rows [{}, +{}) without values", span.first_row, span.n_rows);
    ranges.emplace_back(span.first_row, span.first_row + span.n_rows);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i) {
    if (ranges[i].first < ranges[i - 1].second) fail("forward: embedding rows overlap at row {}", ranges[i].first);
  }
}

void place_embedding_spans(backend::Backend& backend, const backend::TensorView& x,
                           std::span<const EmbeddingSpan> spans) {
  for (const EmbeddingSpan& span : spans) {
    backend::TensorView rows = x;
    rows.data = static_cast<char*>(x.data) + static_cast<size_t>(span.first_row) * x.row_bytes;
    rows.dims[1] = span.n_rows;
    backend.copy_from_host(span.values, rows);
  }
}

}  // namespace lumen::model
