#include "tools/imatrix_collector.h"

#include "util/error.h"

namespace lumen::tools {
namespace {

// llama-imatrix's threshold: smaller products are skipped (they are generation steps, not the
// calibration text's windows; here only the windows ever run).
constexpr int64_t kMinTokens = 16;

}  // namespace

ImatrixCollector::ImatrixCollector(const gguf::GgufFile& file, backend::Backend& backend) : backend_(backend) {
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    if (!tensor.name.starts_with("blk.")) continue;
    const int64_t count = tensor.dims.size() > 2 ? tensor.dims[2] : 1;
    const uint64_t matrix_bytes = tensor.bytes / static_cast<uint64_t>(count);
    for (int64_t e = 0; e < count; ++e) {
      matrices_.emplace(tensor.data + static_cast<uint64_t>(e) * matrix_bytes, Matrix{tensor.name, e, count});
    }
  }
}

void ImatrixCollector::on_matmul(const backend::TensorView& weight, const backend::TensorView& input) {
  const int64_t columns = input.dims[0];
  const int64_t tokens = input.dims[1];
  const auto found = matrices_.find(weight.data);
  if (found == matrices_.end()) {
    fail("imatrix: a layer weight is not a view of the model file (only the CPU backend keeps weights in place)");
  }
  const Matrix& matrix = found->second;
  if (matrix.count == 1 && tokens < kMinTokens) return;
  Sums& sums = sums_[matrix.name];
  if (sums.squares.empty()) {
    sums.squares.assign(static_cast<size_t>(columns * matrix.count), 0.0);
    sums.tokens.assign(static_cast<size_t>(matrix.count), 0);
  }
  if (static_cast<int64_t>(sums.squares.size()) != columns * matrix.count) {
    fail("imatrix: '{}' was multiplied with {} and then {} columns", matrix.name,
         static_cast<int64_t>(sums.squares.size()) / matrix.count, columns);
  }
  host_.resize(static_cast<size_t>(columns * tokens));
  backend_.copy_to_host(input, host_.data());
  double* squares = sums.squares.data() + matrix.index * columns;
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = host_.data() + t * columns;
    for (int64_t c = 0; c < columns; ++c) squares[c] += static_cast<double>(row[c]) * static_cast<double>(row[c]);
  }
  sums.tokens[static_cast<size_t>(matrix.index)] += tokens;
}

quantize::Imatrix ImatrixCollector::entries() const {
  quantize::Imatrix imatrix;
  for (const auto& [name, sums] : sums_) {
    quantize::ImatrixEntry entry;
    entry.columns = static_cast<int64_t>(sums.squares.size() / sums.tokens.size());
    entry.sums.assign(sums.squares.begin(), sums.squares.end());
    entry.counts = sums.tokens;
    imatrix.entries.emplace(name, std::move(entry));
  }
  return imatrix;
}

}  // namespace lumen::tools
