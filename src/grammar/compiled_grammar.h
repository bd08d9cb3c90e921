#pragma once
// What compile_grammar builds: the grammar, the vocabulary, the initial stacks, and the
// per-position token caches that make masks fast (built lazily, the first time a position is
// the top of a stack, and shared by every matcher of the grammar on every thread).
//
// A context cache answers, for the stacks whose top is a position and whose next
// kContextFrames frames are given positions, which tokens are allowed whatever lies further
// below (XGrammar's context-independent tokens, with a few frames of context): walking a token
// from that stack prefix either stays inside it (accepted or rejected for sure), or completes
// its bottom frame with bytes left over: those tokens depend on the rest of the stack and are
// checked against the real stack at mask time ("uncertain"). One frame of context is not
// enough: a JSON string's character class sits in a group rule that ends after every
// character, so every longer token would be uncertain.
#include <string>
#include <unordered_map>
#include <memory>
#include <mutex>
#include <span>
#include <utility>
#include <vector>

#include "grammar/byte_walker.h"
#include "grammar/grammar_matcher.h"
#include "grammar/grammar_rules.h"
#include "grammar/cache_budget.h"
#include "grammar/mask_work.h"
#include "grammar/parse_stack.h"
#include "grammar/stack_set_dfa.h"
#include "grammar/utf8_decode.h"

namespace lumen::grammar {

struct PositionCache {
  std::vector<uint32_t> accepted;       // bitmask over token ids
  std::vector<uint32_t> uncertain;      // trie ranks (lexicographic order)
  std::vector<uint16_t> uncertain_lcp;  // common prefix length with the previous uncertain token
  size_t bytes() const { return accepted.size() * 4 + uncertain.size() * 6; }
};

// The matcher's state between tokens.
struct MatchState {
  std::vector<Stack> stacks;
  Utf8Partial utf8;
  bool terminated = false;
  bool can_terminate() const;
};

class CompiledGrammar {
 public:
  CompiledGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenVocabulary> vocabulary,
                  std::shared_ptr<CacheBudget> shared_budget = nullptr);
  ~CompiledGrammar();

  const Grammar& grammar() const { return *grammar_; }
  const TokenVocabulary& vocabulary() const { return *vocabulary_; }
  const std::shared_ptr<const MatchState>& initial_state() const { return initial_; }

  // The frames of context a cache key holds below the top position.
  static constexpr int kContextFrames = 4;
  // The key of a stack's cache: its top position and the positions of up to kContextFrames
  // frames below (fewer where the stack ends).
  using ContextKey = std::string;
  static void context_key(const Stack& stack, ContextKey& key);
  // The cache of a stack prefix, built on first use (with the caller's DFA, see MaskScratch);
  // nullptr when the memory budget for caches is spent (the mask then walks the whole
  // vocabulary for those stacks).
  // The build charges `work`, and throws GrammarBudgetError past its limits.
  const PositionCache* context_cache(const Stack& stack, const ContextKey& key, StackSetDfa& dfa, MaskWork& work) const;

  // The memory shared with the engine's other grammars (null: none): matchers charge their
  // DFAs to it too (MaskScratch).
  const std::shared_ptr<CacheBudget>& shared_budget() const { return shared_budget_; }

  // A matcher's DFA (MaskScratch) starts over past this many stack sets.
  static constexpr size_t kMaxDfaStates = 1 << 16;

  // Cache memory budget in bytes (the grammar may come from an HTTP client).
  static constexpr size_t kCacheBudgetBytes = size_t{256} << 20;

 private:
  std::unique_ptr<PositionCache> build_context_cache(const Stack& stack, StackSetDfa& dfa, MaskWork& work) const;

  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenVocabulary> vocabulary_;
  NodeArena initial_arena_;
  std::shared_ptr<const MatchState> initial_;
  mutable std::mutex mutex_;  // guards caches_ and cache_bytes_ (not the builds)
  mutable std::unordered_map<ContextKey, std::unique_ptr<PositionCache>> caches_;
  mutable size_t cache_bytes_ = 0;
  std::shared_ptr<CacheBudget> shared_budget_;  // null: only kCacheBudgetBytes bounds the caches
};

// What a mask computation reuses between calls (one per matcher; not shared).
// The DFA of stack sets lives here, one per matcher, so that the cache builds of one
// sequence share their steps (the positions of a bounded string, `[a-z]{0,64}`, are 64
// contexts whose walks go through the same stack sets) and builds on different threads
// share nothing.
struct MaskScratch {
  explicit MaskScratch(const Grammar& grammar, MaskLimits mask_limits = {},
                       std::shared_ptr<CacheBudget> budget = nullptr)
      : limits(mask_limits), shared_budget(std::move(budget)), walker(grammar), dfa(grammar) {
    walker.count_work(&work);
    dfa.count_work(&work, limits.dfa_bytes);
  }
  ~MaskScratch() {
    if (shared_budget) shared_budget->give_back(charged_bytes);
  }
  MaskScratch(const MaskScratch&) = delete;  // the walker and the DFA point at `work`
  MaskScratch& operator=(const MaskScratch&) = delete;
  MaskLimits limits;
  // The DFA is a cache like the context caches, and is charged with them: a mask starts
  // by dropping it when the engine's grammar memory is spent, and ends by charging its growth.
  std::shared_ptr<CacheBudget> shared_budget;
  size_t charged_bytes = 0;
  MaskWork work;            // the current mask's, restarted by fill_token_mask
  // Of every mask so far (the matcher's, or a request's: GrammarMatcher::share_mask_allowance).
  std::shared_ptr<MaskAllowance> allowance = std::make_shared<MaskAllowance>();
  ByteWalker walker;
  StackSetDfa dfa;
  std::vector<std::pair<CompiledGrammar::ContextKey, Stack>> keyed;
  std::vector<Stack> group;
};

// Sets exactly the bits of the tokens allowed after `state` (mask_engine.cc). Throws
// GrammarBudgetError past scratch.limits (the bitmask is then not a mask).
void fill_token_mask(const CompiledGrammar& compiled, const MatchState& state, MaskScratch& scratch,
                     std::span<uint32_t> bitmask);

}  // namespace lumen::grammar
