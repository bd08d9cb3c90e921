#include "spec/ngram_pool.h"

#include <algorithm>

namespace lumen::spec {

void NgramPool::add(int32_t first, std::span<const int32_t> tail) {
  std::vector<int32_t>& flat = tails_[first];
  const auto width = static_cast<size_t>(tail_);
  // Where it is already held (then it moves to the front), else the oldest slot (dropped when
  // full) or a new one.
  size_t held = flat.size() / width;
  size_t from = held;
  for (size_t k = 0; k < held; ++k) {
    if (std::equal(tail.begin(), tail.end(), flat.begin() + static_cast<std::ptrdiff_t>(k * width))) {
      from = k;
      break;
    }
  }
  if (from == held) {
    if (held < static_cast<size_t>(capacity_)) {
      flat.resize(flat.size() + width);
      ++held;
    }
    from = held - 1;
  }
  // Shift [0, from) one slot back and put the n-gram first.
  std::copy_backward(flat.begin(), flat.begin() + static_cast<std::ptrdiff_t>(from * width),
                     flat.begin() + static_cast<std::ptrdiff_t>((from + 1) * width));
  std::copy(tail.begin(), tail.end(), flat.begin());
}

std::vector<std::span<const int32_t>> NgramPool::find(int32_t first) const {
  std::vector<std::span<const int32_t>> out;
  const auto it = tails_.find(first);
  if (it == tails_.end()) return out;
  const auto width = static_cast<size_t>(tail_);
  for (size_t k = 0; k * width < it->second.size(); ++k) out.emplace_back(it->second.data() + k * width, width);
  return out;
}

size_t NgramPool::n_ngrams() const {
  size_t n = 0;
  for (const auto& [first, flat] : tails_) n += flat.size() / static_cast<size_t>(tail_);
  return n;
}

}  // namespace lumen::spec
