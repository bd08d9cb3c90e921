#pragma once
// Walks the matcher byte by byte down a path of the token trie, keeping the stack set at every
// depth so that the next token, which shares a prefix with this one, starts where they part.
#include <cstdint>
#include <span>
#include <vector>

#include "grammar/stack_stepper.h"

namespace lumen::grammar {

class ByteWalker {
 public:
  explicit ByteWalker(const Grammar& grammar) : stepper_(grammar) {}

  void count_work(MaskWork* work) { stepper_.count_work(work); }

  // Level 0: these stacks in this UTF-8 state.
  void reset(std::span<const Stack> stacks, Utf8Partial utf8) {
    arena_.reset({0, 0});
    stacks_.assign(stacks.begin(), stacks.end());
    levels_.clear();
    levels_.push_back({0, static_cast<uint32_t>(stacks_.size()), utf8, arena_.mark(), false});
  }

  // Feeds one byte on top of the deepest level, adding a level (even a dead one, so that its
  // `escaped` can be read). Returns whether some stack survived.
  bool push(uint8_t byte) {
    const Level& top = levels_.back();
    Utf8Partial utf8 = top.utf8;
    bool escaped = false;
    scratch_.clear();
    NodeArena::Mark mark = arena_.mark();
    if (top.begin != top.end) {
      std::span<const Stack> in(stacks_.data() + top.begin, top.end - top.begin);
      stepper_.step_byte(in, utf8, byte, arena_, scratch_, escaped);
    }
    uint32_t begin = static_cast<uint32_t>(stacks_.size());
    stacks_.insert(stacks_.end(), scratch_.begin(), scratch_.end());
    levels_.push_back({begin, static_cast<uint32_t>(stacks_.size()), utf8, mark, escaped});
    return !scratch_.empty();
  }

  // Keeps levels 0..depth.
  void pop_to(size_t depth) {
    if (depth + 1 >= levels_.size()) return;
    const Level& first_gone = levels_[depth + 1];
    stacks_.resize(first_gone.begin);
    arena_.reset(first_gone.mark);
    levels_.resize(depth + 1);
  }

  size_t depth() const { return levels_.size() - 1; }
  bool alive() const { return levels_.back().begin != levels_.back().end; }
  bool escaped() const { return levels_.back().escaped; }
  std::span<const Stack> top_stacks() const {
    return {stacks_.data() + levels_.back().begin, levels_.back().end - levels_.back().begin};
  }
  Utf8Partial top_utf8() const { return levels_.back().utf8; }

 private:
  struct Level {
    uint32_t begin, end;  // stacks_[begin, end)
    Utf8Partial utf8;
    NodeArena::Mark mark;  // the arena before this level's nodes
    bool escaped;
  };
  StackStepper stepper_;
  NodeArena arena_;
  std::vector<Stack> stacks_;
  std::vector<Stack> scratch_;
  std::vector<Level> levels_;
};

}  // namespace lumen::grammar
