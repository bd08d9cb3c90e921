#include "grammar/stack_set_dfa.h"

#include <algorithm>
#include <cstring>

namespace lumen::grammar {

StackSetDfa::StackSetDfa(const Grammar& grammar) : stepper_(grammar), transitions_(1024) {
  arena_.enable_interning();
}

void StackSetDfa::clear() {
  // Memory is returned, not only emptied: clear() is how the DFA stays within its budget.
  arena_ = NodeArena();
  arena_.enable_interning();
  states_ = {};
  pool_ = {};
  by_stacks_ = {};
  by_stacks_bytes_ = 0;
  dense_ = {};
  loop_of_state_ = {};
  non_ascii_target_ = {};
  loops_ = {};
  transitions_ = std::vector<Transition>(1024);
  transition_count_ = 0;
}

size_t StackSetDfa::bytes() const {
  return arena_.bytes() + states_.capacity() * sizeof(State) + pool_.capacity() * sizeof(Stack) + by_stacks_bytes_ +
         dense_.capacity() * sizeof(uint32_t) + transitions_.capacity() * sizeof(Transition) +
         loop_of_state_.capacity() * sizeof(int32_t) + non_ascii_target_.capacity() * sizeof(uint32_t) +
         loops_.capacity() * sizeof(TokenVocabulary::ByteSet);
}

const TokenVocabulary::ByteSet& StackSetDfa::ascii_loop(uint32_t state) {
  if (state >= loop_of_state_.size()) loop_of_state_.resize(states_.size(), -1);
  if (loop_of_state_[state] < 0) {
    TokenVocabulary::ByteSet loop{{0, 0}};
    for (uint32_t b = 0; b < 128; ++b) {
      const Step s = step(state, static_cast<uint8_t>(b));
      if (s.next == state && !s.escaped) loop.bits[b >> 6] |= uint64_t{1} << (b & 63);
    }
    loop_of_state_[state] = static_cast<int32_t>(loops_.size());
    loops_.push_back(loop);
  }
  return loops_[static_cast<size_t>(loop_of_state_[state])];
}

uint32_t StackSetDfa::non_ascii_target(uint32_t state) {
  if (state >= non_ascii_target_.size()) non_ascii_target_.resize(states_.size(), kUnknownTarget);
  if (non_ascii_target_[state] == kUnknownTarget) {
    const Grammar& g = stepper_.grammar();
    bool uniform = states_[state].utf8.remaining == 0;
    for (const Stack& s : stacks(state)) {
      if (!uniform || s.pos == kAcceptedPos) continue;
      const Element& e = g.elements[static_cast<size_t>(s.pos)];
      bool covered = false, touched = false;  // some range covers / meets [0x80, 0x10FFFF]
      for (uint32_t r = e.ranges_begin; r < e.ranges_end; ++r) {
        covered |= g.ranges[r].lo <= 0x80 && g.ranges[r].hi >= 0x10FFFF;
        touched |= g.ranges[r].hi >= 0x80;
      }
      uniform = covered || !touched;
    }
    uint32_t target = kDead;
    if (uniform) {  // C2 80 (U+0080) stands for every non-ASCII character
      const Step first = step(state, 0xC2);
      if (first.next != kDead && !first.escaped) {
        const Step second = step(first.next, 0x80);
        if (!second.escaped) target = second.next;
      }
    }
    non_ascii_target_[state] = target;
  }
  return non_ascii_target_[state];
}

uint32_t StackSetDfa::start(std::span<const Stack> stacks, Utf8Partial utf8) {
  in_.assign(stacks.begin(), stacks.end());
  return intern(in_, utf8);
}

uint32_t StackSetDfa::intern(std::vector<Stack>& stacks, Utf8Partial utf8) {
  std::sort(stacks.begin(), stacks.end(), [](const Stack& a, const Stack& b) {
    return a.pos != b.pos ? a.pos < b.pos : std::less<const StackNode*>()(a.rest, b.rest);
  });
  stacks.erase(std::unique(stacks.begin(), stacks.end()), stacks.end());
  // The key: the UTF-8 state, then every stack's (pos, rest) bytes (no padding bytes).
  key_.clear();
  key_.append(reinterpret_cast<const char*>(&utf8.bits), sizeof utf8.bits);
  key_.push_back(static_cast<char>(utf8.remaining));
  key_.push_back(static_cast<char>(utf8.length));
  for (const Stack& s : stacks) {
    key_.append(reinterpret_cast<const char*>(&s.pos), sizeof s.pos);
    key_.append(reinterpret_cast<const char*>(&s.rest), sizeof s.rest);
  }
  auto [it, inserted] = by_stacks_.try_emplace(key_, static_cast<uint32_t>(states_.size()));
  if (inserted) {
    const auto begin = static_cast<uint32_t>(pool_.size());
    pool_.insert(pool_.end(), stacks.begin(), stacks.end());
    states_.push_back({begin, static_cast<uint32_t>(pool_.size()), utf8});
    constexpr size_t kMapNodeBytes = 64;  // a node of the map and its bucket, roughly
    by_stacks_bytes_ += key_.size() + kMapNodeBytes;
    if (bytes() > byte_limit_) {
      throw GrammarBudgetError(
          "grammar budget exceeded: the parser's stack sets of one next-token mask need more than " +
          std::to_string(byte_limit_ >> 20) +
          " MiB (an ambiguous grammar, such as nested repetition, keeps too many parser stacks "
          "alive); simplify the grammar, pattern or schema");
    }
  }
  return it->second;
}

StackSetDfa::Step StackSetDfa::compute(uint32_t state, uint8_t byte) {
  // Copied out: interning appends to pool_, which may move.
  const std::span<const Stack> from = stacks(state);
  in_.assign(from.begin(), from.end());
  Utf8Partial utf8 = states_[state].utf8;
  out_.clear();
  bool escaped = false;
  stepper_.step_byte(in_, utf8, byte, arena_, out_, escaped);
  Step step{out_.empty() ? kDead : intern(out_, utf8), escaped};
  remember((static_cast<uint64_t>(state) << 8) | byte, step);
  return step;
}

void StackSetDfa::remember(uint64_t key, Step step) {
  const auto state = static_cast<uint32_t>(key >> 8);
  if (state < kDenseStates) {
    const size_t rows = static_cast<size_t>(state) + 1;
    if (dense_.size() < rows * 256) dense_.resize(std::min<size_t>(kDenseStates, std::max(rows, dense_.size() / 256 * 2)) * 256, kUnknown);
    dense_[key] = pack(step);
    return;
  }
  if ((transition_count_ + 1) * 2 > transitions_.size()) {
    std::vector<Transition> old = std::move(transitions_);
    transitions_.assign(old.size() * 2, Transition{});
    for (const Transition& t : old)
      if (t.key != kNoKey) {
        const size_t mask = transitions_.size() - 1;
        size_t i = hash(t.key) & mask;
        while (transitions_[i].key != kNoKey) i = (i + 1) & mask;
        transitions_[i] = t;
      }
  }
  const size_t mask = transitions_.size() - 1;
  size_t i = hash(key) & mask;
  while (transitions_[i].key != kNoKey) i = (i + 1) & mask;
  transitions_[i] = {key, step.next, step.escaped};
  ++transition_count_;
}

}  // namespace lumen::grammar
