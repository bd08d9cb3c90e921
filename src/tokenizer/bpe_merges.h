#pragma once
// The merge table of a BPE vocabulary and the merge loop over one word. Symbols are token ids;
// the lowest-ranked adjacent pair is merged first, the leftmost among equal ranks (Hugging
// Face's order). A priority queue with lazy invalidation over a linked list of symbols makes a
// word of n symbols cost O(n log n).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lumen::tokenizer {

// Token text -> id, with lookups by string_view (no temporary strings on the hot path).
class TokenIndex {
 public:
  explicit TokenIndex(const std::vector<std::string>& tokens);
  std::optional<int32_t> find(std::string_view text) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, Hash, std::equal_to<>> ids_;
};

// Reusable buffers for BpeMerges::apply, so merging a word allocates nothing once warm.
struct MergeScratch {
  struct Candidate {
    int32_t rank;
    int32_t pos;  // the left symbol's position
    int32_t left;
    int32_t right;
    int32_t result;
    // Inverted for std::push_heap's max-heap: lowest rank first, then leftmost.
    bool operator<(const Candidate& other) const {
      return rank != other.rank ? rank > other.rank : pos > other.pos;
    }
  };
  std::vector<int32_t> prev, next;
  std::vector<Candidate> heap;
};

class BpeMerges {
 public:
  // `merges` are "left right" lines in rank order. A line whose parts or whose concatenation
  // is not a token cannot produce a token and is skipped, as is a repeat of a pair.
  BpeMerges(const std::vector<std::string>& merges, const TokenIndex& index);

  size_t size() const { return size_; }

  // Merges `symbols` (token ids of a word's initial pieces) in place.
  void apply(std::vector<int32_t>& symbols, MergeScratch& scratch) const;

 private:
  // An open-addressing table (linear probing, at most half full): the merge lookup is the
  // hottest path in encoding, and one probe into a flat array beats a node-based map.
  struct Slot {
    uint64_t key = kEmpty;
    int32_t rank = 0;
    int32_t result = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  size_t slot_of(uint64_t k) const {
    // Fibonacci hashing spreads the packed id pairs over the table.
    return static_cast<size_t>((k * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  const Slot* find(int32_t left, int32_t right) const;

  std::vector<Slot> slots_;
  unsigned shift_ = 63;
  size_t size_ = 0;
};

}  // namespace lumen::tokenizer
