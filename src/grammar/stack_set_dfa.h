#pragma once
// The matcher's byte steps from one start set of stacks, determinized lazily: a state is a
// set of stacks (with its UTF-8 state), a transition the set after one byte, and both are
// remembered, so that walking the whole token trie (a context cache build) steps the pushdown
// matcher once per distinct (state, byte) and otherwise costs one table lookup per trie node.
//
// The trie walk enters few distinct stack sets (inside a JSON string, every character leads
// back to the same set), but reaches them through many paths: stack nodes are hash-consed
// (NodeArena::enable_interning) so that equal sets are equal pointer for pointer, and states
// are interned by their sorted stacks.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <string>
#include <vector>

#include "grammar/stack_stepper.h"

namespace lumen::grammar {

class StackSetDfa {
 public:
  static constexpr uint32_t kDead = ~0u;  // no stack survives

  explicit StackSetDfa(const Grammar& grammar);

  // The state of these stacks (their nodes are used as they are: they must outlive this).
  uint32_t start(std::span<const Stack> stacks, Utf8Partial utf8);

  struct Step {
    uint32_t next;  // kDead when no stack survives the byte
    bool escaped;   // some stack completed the rule on escape_node() (StackStepper::step_byte)
  };
  // The state after `byte` from `state` (not kDead).
  Step step(uint32_t state, uint8_t byte) {
    const uint64_t key = (static_cast<uint64_t>(state) << 8) | byte;
    const size_t mask = transitions_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      const Transition& t = transitions_[i];
      if (t.key == key) return {t.next, t.escaped};
      if (t.key == kNoKey) break;
    }
    return compute(state, byte);
  }

  std::span<const Stack> stacks(uint32_t state) const {
    const State& s = states_[state];
    return {pool_.data() + s.begin, s.end - s.begin};
  }
  size_t states() const { return states_.size(); }

 private:
  struct State {
    uint32_t begin, end;  // pool_[begin, end), sorted
    Utf8Partial utf8;
  };
  static constexpr uint64_t kNoKey = ~uint64_t{0};
  struct Transition {
    uint64_t key = kNoKey;  // state << 8 | byte
    uint32_t next = kDead;
    bool escaped = false;
  };
  static size_t hash(uint64_t key) {
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    return static_cast<size_t>(h ^ (h >> 29));
  }

  Step compute(uint32_t state, uint8_t byte);
  uint32_t intern(std::vector<Stack>& stacks, Utf8Partial utf8);
  void remember(uint64_t key, Step step);

  StackStepper stepper_;
  NodeArena arena_;
  std::vector<State> states_;
  std::vector<Stack> pool_;
  std::unordered_map<std::string, uint32_t> by_stacks_;
  std::vector<Transition> transitions_;
  size_t transition_count_ = 0;
  std::vector<Stack> in_, out_;
  std::string key_;
};

}  // namespace lumen::grammar
