#pragma once
// What one next-token mask may cost (issue 47). A grammar can be cheap to parse and still
// make its masks expensive: an ambiguous nesting such as ("a"{0,40}){0,50} keeps thousands of
// parser stacks alive, each with its own context cache to build over the whole vocabulary, and
// the lazily built DFA of stack sets grows with them. Every mask therefore counts its work (one
// unit per parser stack visited in a byte step, per token-trie node walked, per uncertain token
// checked) and its DFA's bytes, and a mask past either limit fails with GrammarBudgetError
// instead of taking the engine's step (and memory) with it: the request that sent the grammar
// ends with an error, the others go on.
#include <atomic>
#include <cstdint>
#include <string>

#include "grammar/grammar.h"

namespace lumen::grammar {

// A grammar whose masks cost more than the limits allow. A GrammarError: found while a
// grammar is compiled (its first mask is computed then), it is the client's 400.
class GrammarBudgetError : public GrammarError {
 public:
  explicit GrammarBudgetError(const std::string& message) : GrammarError(message, 0) {}
};

struct MaskLimits {
  // Work units per mask. The costliest ordinary mask (one building a context cache over a
  // 49K-token vocabulary) takes about 110 K (grammar_budget_test.cc measures them); this is
  // ~70x that, about 0.2 s of one core here (docs/security.md has the measured worst case).
  uint64_t work = uint64_t{8} << 20;
  // Work of all of one matcher's masks together (one sequence of a request): at most
  // burst_work plus sustained_work per mask so far. A grammar tuned to stay just under the
  // per-mask limit cannot hold every step for its whole output: after a burst of a few seconds
  // it may only take ~25 ms a step on average. Ordinary grammars take under 110 K per mask,
  // even in a string of thousands of characters (a new context cache at every position).
  uint64_t burst_work = uint64_t{64} << 20;
  uint64_t sustained_work = uint64_t{1} << 20;
  // Bytes of one matcher's DFA of stack sets (states, transitions, stack nodes). It starts
  // over before a cache build once past half of this; one build that needs more fails.
  size_t dfa_bytes = size_t{64} << 20;

  // The defaults above are for a token trie of up to kReferenceTrieNodes (SmolLM2's 49K
  // tokens); an ordinary mask's cost grows with the trie (a cache build walks it), so the work
  // limits grow with it for larger vocabularies (Qwen's 150K, Gemma's 262K tokens).
  static constexpr size_t kReferenceTrieNodes = 160'000;
  static MaskLimits for_trie(size_t trie_nodes) {
    MaskLimits limits;
    if (trie_nodes > kReferenceTrieNodes) {
      const auto scale = [&](uint64_t units) { return units * trie_nodes / kReferenceTrieNodes; };  // < 2^60
      limits.work = scale(limits.work);
      limits.burst_work = scale(limits.burst_work);
      limits.sustained_work = scale(limits.sustained_work);
    }
    return limits;
  }
};

// What one output's masks spent together, against MaskLimits::burst_work + sustained_work per
// mask. Shared by every sequence of a request (its n choices), so that n = 16 does not make
// sixteen allowances; atomic, as their masks may be computed on different threads.
struct MaskAllowance {
  std::atomic<uint64_t> used{0};
  std::atomic<uint64_t> masks{0};
};

class MaskWork {
 public:
  // `total`: whether the limit is what is left of the matcher's whole allowance (the message
  // says so).
  void start(uint64_t limit, bool total = false) {
    used_ = 0;
    limit_ = limit;
    total_ = total;
  }
  void charge(uint64_t units) {
    used_ += units;
    if (used_ > limit_) exceeded();
  }
  uint64_t used() const { return used_; }

 private:
  [[noreturn]] void exceeded() const {
    throw GrammarBudgetError(std::string("grammar budget exceeded: ") +
                             (total_ ? "this output's next-token masks took more work units in all than the limit"
                                     : "one next-token mask took more than " + std::to_string(limit_) + " work units") +
                             " (an ambiguous grammar, such as nested repetition, keeps too many parser stacks alive); "
                             "simplify the grammar, pattern or schema");
  }
  uint64_t used_ = 0;
  uint64_t limit_ = ~uint64_t{0};  // unlimited until started
  bool total_ = false;
};

}  // namespace lumen::grammar
