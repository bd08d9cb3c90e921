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
#include "grammar/token_vocabulary.h"

namespace lumen::grammar {

class StackSetDfa {
 public:
  static constexpr uint32_t kDead = ~0u;  // no stack survives

  explicit StackSetDfa(const Grammar& grammar);

  // The state of these stacks (their nodes are used as they are: they must outlive this).
  uint32_t start(std::span<const Stack> stacks, Utf8Partial utf8);
  // A stack node of this DFA's own (hash-consed, lives as long as the DFA or until clear()).
  const StackNode* node(int32_t pos, const StackNode* parent) { return arena_.make(pos, parent); }
  // Forgets every state, transition and node.
  void clear();

  struct Step {
    uint32_t next;  // kDead when no stack survives the byte
    bool escaped;   // some stack completed the rule on escape_node() (StackStepper::step_byte)
  };
  // The state after `byte` from `state` (not kDead).
  Step step(uint32_t state, uint8_t byte) {
    if (state < kDenseStates) {
      const size_t at = (static_cast<size_t>(state) << 8) | byte;
      if (at < dense_.size() && dense_[at] != kUnknown) return unpack(dense_[at]);
    } else {
      const uint64_t key = (static_cast<uint64_t>(state) << 8) | byte;
      const size_t mask = transitions_.size() - 1;
      for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
        const Transition& t = transitions_[i];
        if (t.key == key) return {t.next, t.escaped};
        if (t.key == kNoKey) break;
      }
    }
    return compute(state, byte);
  }

  // The ASCII bytes that lead from `state` back to itself without escaping (the characters
  // of a JSON string's body): any text made of them keeps the stacks as they are. Computed on
  // first use (128 steps) and remembered.
  const TokenVocabulary::ByteSet& ascii_loop(uint32_t state);
  // The state every non-ASCII character leads to from `state`, without escaping and every
  // partial sequence on the way alive; kDead when they do not all lead to one such state.
  // (The state is at a character boundary, and each stack's set holds all non-ASCII code
  // points or none, so one character, U+0080, stands for all.)
  uint32_t non_ascii_target(uint32_t state);

  std::span<const Stack> stacks(uint32_t state) const {
    const State& s = states_[state];
    return {pool_.data() + s.begin, s.end - s.begin};
  }
  size_t states() const { return states_.size(); }
  // Memory held (capacities, stack nodes, the state index), grown by each new state.
  size_t bytes() const;

  // Steps charge their work here; a new state past `byte_limit` bytes throws
  // GrammarBudgetError (the DFA stays consistent: clear() it or go on under a new limit).
  void count_work(MaskWork* work, size_t byte_limit) {
    stepper_.count_work(work);
    byte_limit_ = byte_limit;
  }
  size_t byte_limit() const { return byte_limit_; }

 private:
  struct State {
    uint32_t begin, end;  // pool_[begin, end), sorted
    Utf8Partial utf8;
  };
  // The first states' transitions sit in a dense table (256 entries a state, 1 KiB; at most
  // 512 KiB, as every matcher has a DFA): a trie walk spends most of its lookups in a few
  // states. Further states (deep recursion makes many) go to a hash table. An entry is (next + 2) << 1 | escaped, with 1 << 1 | escaped for dead, and
  // 0 for a transition not computed yet.
  static constexpr uint32_t kDenseStates = 512;
  static constexpr uint32_t kUnknown = 0;
  static uint32_t pack(Step s) { return ((s.next == kDead ? 1u : s.next + 2u) << 1) | (s.escaped ? 1u : 0u); }
  static Step unpack(uint32_t e) { return {(e >> 1) == 1u ? kDead : (e >> 1) - 2u, (e & 1u) != 0}; }
  std::vector<uint32_t> dense_;
  std::vector<int32_t> loop_of_state_;  // index into loops_, -1: not computed
  std::vector<uint32_t> non_ascii_target_;  // kUnknownTarget: not computed
  static constexpr uint32_t kUnknownTarget = kDead - 1;
  std::vector<TokenVocabulary::ByteSet> loops_;

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
  size_t by_stacks_bytes_ = 0;  // keys and node overhead of by_stacks_
  size_t byte_limit_ = ~size_t{0};
  std::vector<Transition> transitions_;
  size_t transition_count_ = 0;
  std::vector<Stack> in_, out_;
  std::string key_;
};

}  // namespace lumen::grammar
