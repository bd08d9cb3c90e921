#include "quantize/quantize_order.h"

#include <algorithm>
#include <limits>

namespace lumen::quantize {

std::optional<int> block_number(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (name.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  size_t at = kPrefix.size();
  bool negative = false;
  if (at < name.size() && (name[at] == '-' || name[at] == '+')) negative = name[at++] == '-';
  int64_t value = 0;
  const size_t first_digit = at;
  while (at < name.size() && name[at] >= '0' && name[at] <= '9') {
    value = std::min<int64_t>(value * 10 + (name[at] - '0'), std::numeric_limits<int>::max());
    ++at;
  }
  if (at == first_digit) return std::nullopt;
  return static_cast<int>(negative ? -value : value);
}

bool quantize_order_before(std::string_view a, std::string_view b) {
  const int block_a = block_number(a).value_or(-1);
  const int block_b = block_number(b).value_or(-1);
  if (block_a != block_b) return block_a < block_b;
  return a < b;
}

std::vector<const gguf::TensorInfo*> quantize_order(const gguf::GgufFile& file) {
  std::vector<const gguf::TensorInfo*> order;
  order.reserve(file.tensors().size());
  for (const gguf::TensorInfo& tensor : file.tensors()) order.push_back(&tensor);
  std::stable_sort(order.begin(), order.end(), [](const gguf::TensorInfo* a, const gguf::TensorInfo* b) {
    return quantize_order_before(a->name, b->name);
  });
  return order;
}

}  // namespace lumen::quantize
