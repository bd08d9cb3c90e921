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
    if (tensor.name.starts_with("blk.")) names_.emplace(tensor.data, tensor.name);
  }
}

void ImatrixCollector::on_matmul(const backend::TensorView& weight, const backend::TensorView& input) {
  const int64_t columns = input.dims[0];
  const int64_t tokens = input.dims[1];
  if (tokens < kMinTokens) return;
  const auto name = names_.find(weight.data);
  if (name == names_.end()) {
    fail("imatrix: a layer weight is not a view of the model file (only the CPU backend keeps weights in place)");
  }
  Sums& sums = sums_[name->second];
  if (sums.squares.empty()) sums.squares.assign(static_cast<size_t>(columns), 0.0);
  if (static_cast<int64_t>(sums.squares.size()) != columns) {
    fail("imatrix: '{}' was multiplied with {} and then {} columns", name->second, sums.squares.size(), columns);
  }
  host_.resize(static_cast<size_t>(columns * tokens));
  backend_.copy_to_host(input, host_.data());
  for (int64_t t = 0; t < tokens; ++t) {
    const float* row = host_.data() + t * columns;
    for (int64_t c = 0; c < columns; ++c) {
      sums.squares[static_cast<size_t>(c)] += static_cast<double>(row[c]) * static_cast<double>(row[c]);
    }
  }
  sums.tokens += tokens;
}

quantize::Imatrix ImatrixCollector::entries() const {
  quantize::Imatrix imatrix;
  for (const auto& [name, sums] : sums_) {
    quantize::ImatrixEntry entry;
    entry.columns = static_cast<int64_t>(sums.squares.size());
    entry.sums.assign(sums.squares.begin(), sums.squares.end());
    entry.counts = {sums.tokens};
    imatrix.entries.emplace(name, std::move(entry));
  }
  return imatrix;
}

}  // namespace lumen::tools
