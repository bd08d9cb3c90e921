#include "backend/cuda/fused_input_quantization.h"

namespace lumen::backend::cuda {

using tensor::DType;

std::optional<DType> FusedInputQuantization::emit_for(const void* site, int64_t cols) const {
  const auto it = consumer_type_.find(site);
  if (it == consumer_type_.end()) return std::nullopt;
  const int64_t block = it->second == DType::Q8_K ? 256 : 32;
  if (cols <= 0 || cols % block != 0) return std::nullopt;
  return it->second;
}

void FusedInputQuantization::produced(const void* site, const void* out, int64_t rows, int64_t cols, int64_t stride,
                                      std::optional<DType> emitted, uint64_t op, void* codes) {
  last_ = {site, out, rows, cols, stride, emitted, op, codes, true, false};
  // Codes elsewhere leave the scratch as it was, which no consumer reads for them.
  scratch_holds_producer_ = emitted.has_value() && codes == nullptr;
}

bool FusedInputQuantization::consume(const void* x, DType act, int64_t rows, int64_t cols, int64_t stride,
                                     uint64_t op) {
  // Only the op call right after the producer's reads its output as the producer left it.
  if (!last_.valid || last_.op + 1 != op || last_.out != x || last_.rows != rows || last_.cols != cols ||
      (rows > 1 && last_.stride != stride)) {
    return false;
  }
  if (act != DType::Q8_0 && act != DType::Q8_1 && act != DType::Q8_K) return false;  // float weights
  // The first matmul to read it names the site's consumer (in one matmul_same_input of mixed
  // types, the first output's: the later ones quantize as they would have anyway).
  if (!last_.consumed) consumer_type_[last_.site] = act;
  last_.consumed = true;
  const bool ready = (scratch_holds_producer_ || last_.codes != nullptr) && last_.emitted == act;
  prequantized_ += ready ? 1 : 0;
  return ready;
}

}  // namespace lumen::backend::cuda
