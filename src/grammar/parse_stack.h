#pragma once
// The matcher's pushdown stacks, persistent: a stack is its top position plus a pointer to
// the rest, and the rest is an immutable linked list shared between stacks (XGrammar's stack
// tree). Copying a matcher or keeping history copies pointers, never frames.
#include <cstdint>
#include <memory>
#include <vector>

namespace lumen::grammar {

// A frame below the top: where to continue in the calling alternative once the rule above
// completes.
struct StackNode {
  int32_t pos;
  const StackNode* parent;
};

// The top of a stack: `pos` is a kChars element (the next character must be in its set), or
// kAcceptedPos: the start rule has completed (the text so far is a sentence).
struct Stack {
  int32_t pos;
  const StackNode* rest;
  bool operator==(const Stack&) const = default;
};
constexpr int32_t kAcceptedPos = -1;

// The node below the start stack of a position cache (compiled_grammar.cc): reaching it means
// the rule around the position completed and what follows is not known there.
inline const StackNode* escape_node() {
  static const StackNode node{-2, nullptr};
  return &node;
}

// Nodes live in chunks that never move; an arena frees them all at once. A mark taken before
// a speculative step lets the step's nodes be dropped when it fails or is undone.
class NodeArena {
 public:
  struct Mark {
    size_t chunk;
    size_t used;
  };

  // With interning on, make() hands back the node it made before for the same (pos, parent)
  // (hash-consing), so that equal stacks are equal pointers: StackSetDfa identifies stack sets
  // by their pointers. Marks must not be reset then (the table would point at reused nodes).
  void enable_interning() { interning_ = true; }

  const StackNode* make(int32_t pos, const StackNode* parent) {
    if (interning_) return interned(pos, parent);
    return fresh(pos, parent);
  }
  Mark mark() const { return {chunk_index_, used_}; }
  void reset(Mark m) {
    chunk_index_ = m.chunk;
    used_ = m.used;
  }
  size_t bytes() const { return chunks_.size() * kChunk * sizeof(StackNode) + table_.size() * sizeof(StackNode*); }

 private:
  static constexpr size_t kChunk = 1024;

  static size_t hash(int32_t pos, const StackNode* parent) {
    uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(parent)) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(pos)) * 0xC2B2AE3D27D4EB4Full;
    return static_cast<size_t>(h ^ (h >> 31));
  }

  const StackNode* interned(int32_t pos, const StackNode* parent) {
    if ((interned_count_ + 1) * 2 > table_.size()) {
      std::vector<const StackNode*> old = std::move(table_);
      table_.assign(old.empty() ? 256 : old.size() * 2, nullptr);
      for (const StackNode* node : old)
        if (node != nullptr) place(node);
    }
    const size_t mask = table_.size() - 1;
    for (size_t i = hash(pos, parent) & mask;; i = (i + 1) & mask) {
      const StackNode* node = table_[i];
      if (node == nullptr) {
        node = fresh(pos, parent);
        table_[i] = node;
        ++interned_count_;
        return node;
      }
      if (node->pos == pos && node->parent == parent) return node;
    }
  }
  void place(const StackNode* node) {
    const size_t mask = table_.size() - 1;
    size_t i = hash(node->pos, node->parent) & mask;
    while (table_[i] != nullptr) i = (i + 1) & mask;
    table_[i] = node;
  }

  const StackNode* fresh(int32_t pos, const StackNode* parent) {
    if (chunks_.empty()) {
      chunks_.push_back(std::make_unique<StackNode[]>(kChunk));
      chunk_index_ = 0;
      used_ = 0;
    } else if (used_ == kChunk) {
      if (++chunk_index_ == chunks_.size()) chunks_.push_back(std::make_unique<StackNode[]>(kChunk));
      used_ = 0;
    }
    StackNode* node = &chunks_[chunk_index_][used_++];
    node->pos = pos;
    node->parent = parent;
    return node;
  }

  std::vector<const StackNode*> table_;  // open addressing, interning on
  size_t interned_count_ = 0;
  bool interning_ = false;
  std::vector<std::unique_ptr<StackNode[]>> chunks_;
  size_t chunk_index_ = 0;
  size_t used_ = 0;
};

}  // namespace lumen::grammar
