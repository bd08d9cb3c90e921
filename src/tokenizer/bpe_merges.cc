#include "tokenizer/bpe_merges.h"

#include <algorithm>

namespace lumen::tokenizer {

TokenIndex::TokenIndex(const std::vector<std::string>& tokens) {
  ids_.reserve(tokens.size());
  // A repeated token text keeps its first id, which is the one a text lookup can reach in
  // Hugging Face's vocabulary map as well.
  for (size_t id = 0; id < tokens.size(); ++id) ids_.emplace(tokens[id], static_cast<int32_t>(id));
}

std::optional<int32_t> TokenIndex::find(std::string_view text) const {
  auto it = ids_.find(text);
  if (it == ids_.end()) return std::nullopt;
  return it->second;
}

BpeMerges::BpeMerges(const std::vector<std::string>& merges, const TokenIndex& index) {
  size_t capacity = 2;
  shift_ = 63;
  while (capacity < merges.size() * 2) {
    capacity *= 2;
    --shift_;
  }
  slots_.assign(capacity, Slot{});
  std::string joined;
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    std::string_view line = merges[rank];
    // The separator is the first space after the first character, as llama.cpp reads it.
    size_t space = line.find(' ', 1);
    if (space == std::string_view::npos) continue;
    std::string_view left_text = line.substr(0, space);
    std::string_view right_text = line.substr(space + 1);
    auto left = index.find(left_text);
    auto right = index.find(right_text);
    joined.assign(left_text);
    joined.append(right_text);
    auto result = index.find(joined);
    if (!left || !right || !result) continue;
    uint64_t k = key(*left, *right);
    size_t mask = slots_.size() - 1;
    size_t i = slot_of(k);
    while (slots_[i].key != kEmpty && slots_[i].key != k) i = (i + 1) & mask;
    if (slots_[i].key == k) continue;  // a repeated pair keeps its first (lowest) rank
    slots_[i] = Slot{k, static_cast<int32_t>(rank), *result};
    ++size_;
  }
}

const BpeMerges::Slot* BpeMerges::find(int32_t left, int32_t right) const {
  uint64_t k = key(left, right);
  size_t mask = slots_.size() - 1;
  for (size_t i = slot_of(k);; i = (i + 1) & mask) {
    if (slots_[i].key == k) return &slots_[i];
    if (slots_[i].key == kEmpty) return nullptr;
  }
}

void BpeMerges::apply(std::vector<int32_t>& symbols, MergeScratch& scratch) const {
  const auto n = static_cast<int32_t>(symbols.size());
  if (n < 2 || size_ == 0) return;

  // Doubly linked list over the positions; a merged-away position gets id -1.
  std::vector<int32_t>& prev = scratch.prev;
  std::vector<int32_t>& next = scratch.next;
  prev.resize(symbols.size());
  next.resize(symbols.size());
  for (int32_t i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }

  using Candidate = MergeScratch::Candidate;
  std::vector<Candidate>& heap = scratch.heap;
  heap.clear();
  auto consider = [&](int32_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    int32_t left = symbols[pos];
    int32_t right = symbols[next[pos]];
    if (const Slot* merge = find(left, right)) {
      heap.push_back({merge->rank, pos, left, right, merge->result});
      std::push_heap(heap.begin(), heap.end());
    }
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);

  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end());
    Candidate top = heap.back();
    heap.pop_back();
    // Stale entries: a symbol only ever grows when merged, so an unchanged pair of ids at the
    // same place means the pair is still there.
    int32_t right_pos = next[top.pos];
    if (symbols[top.pos] != top.left || right_pos < 0 || symbols[right_pos] != top.right) continue;

    symbols[top.pos] = top.result;
    symbols[right_pos] = -1;
    next[top.pos] = next[right_pos];
    if (next[right_pos] >= 0) prev[next[right_pos]] = top.pos;
    consider(prev[top.pos]);
    consider(top.pos);
  }

  size_t kept = 0;
  for (int32_t id : symbols) {
    if (id >= 0) symbols[kept++] = id;
  }
  symbols.resize(kept);
}

}  // namespace lumen::tokenizer
