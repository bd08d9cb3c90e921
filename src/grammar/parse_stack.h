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

  const StackNode* make(int32_t pos, const StackNode* parent) {
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
  Mark mark() const { return {chunk_index_, used_}; }
  void reset(Mark m) {
    chunk_index_ = m.chunk;
    used_ = m.used;
  }
  size_t bytes() const { return chunks_.size() * kChunk * sizeof(StackNode); }

 private:
  static constexpr size_t kChunk = 1024;
  std::vector<std::unique_ptr<StackNode[]>> chunks_;
  size_t chunk_index_ = 0;
  size_t used_ = 0;
};

}  // namespace lumen::grammar
