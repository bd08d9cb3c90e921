#pragma once
// Runs a grammar over a model's tokens: which tokens may come next (a bitmask over the whole
// vocabulary), and the state after each accepted token.
//
//   auto compiled = compile_grammar(parse_gbnf(text), vocabulary);   // shared, thread-safe
//   GrammarMatcher matcher(compiled);                                 // one per sequence
//   matcher.fill_next_token_bitmask(mask);  // before sampling
//   matcher.accept_token(sampled);          // after
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "grammar/cache_budget.h"
#include "grammar/grammar.h"
#include "grammar/mask_work.h"
#include "grammar/token_vocabulary.h"

namespace lumen::grammar {

// A Grammar prepared for one vocabulary (precomputed per-position token sets, caches). Shared
// by every matcher of every request that uses the same grammar with the same model; safe to use
// from several threads at once.
class CompiledGrammar;

// `budget` (may be null): the memory its caches share with other compiled grammars.
std::shared_ptr<const CompiledGrammar> compile_grammar(std::shared_ptr<const Grammar> grammar,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary,
                                                       std::shared_ptr<CacheBudget> budget = nullptr);

// Words of a next-token bitmask: bit (id % 32) of word (id / 32) is set when token id may come
// next.
inline size_t bitmask_words(size_t vocabulary_size) { return (vocabulary_size + 31) / 32; }

class GrammarMatcher {
 public:
  // `max_rollback`: how many accepted tokens (or accept_bytes calls) rollback can undo.
  explicit GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, int max_rollback = 64);
  // Copyable: n > 1 and best_of fork a matcher with the sequence.
  GrammarMatcher(const GrammarMatcher&);
  GrammarMatcher& operator=(const GrammarMatcher&);
  GrammarMatcher(GrammarMatcher&&) noexcept;
  GrammarMatcher& operator=(GrammarMatcher&&) noexcept;
  ~GrammarMatcher();

  // Sets exactly the bits of the tokens that may come next (every word is written). An
  // end-of-generation token is allowed iff the grammar may end here. `bitmask` has
  // bitmask_words(vocabulary size) words. Throws GrammarBudgetError when the mask costs more
  // than the limits (mask_work.h); the matcher's state is unchanged then.
  void fill_next_token_bitmask(std::span<uint32_t> bitmask);
  // The limits of every later mask (and forced_continuation); copies keep them. By default
  // MaskLimits::for_trie of the grammar's vocabulary.
  void set_mask_limits(MaskLimits limits);
  // Masks from now on count against `allowance` (with the other matchers that share it: the
  // sequences of one request) instead of this matcher's own. Copies share it.
  void share_mask_allowance(std::shared_ptr<MaskAllowance> allowance);
  // The work units the last mask took (mask_work.h), and all the masks of its allowance so far.
  uint64_t last_mask_work() const;
  uint64_t total_mask_work() const;

  // Advances over a token. Returns false and changes nothing when the grammar does not allow
  // it. Accepting an end-of-generation token (where allowed) terminates the matcher.
  bool accept_token(int32_t token);
  // Advances over raw bytes (e.g. a forced continuation); false and unchanged if not allowed.
  // One call is one step for rollback.
  bool accept_bytes(std::string_view bytes);

  // Undoes the last `n_tokens` accepted tokens (speculative decoding rejects drafts). At most
  // max_rollback() tokens back.
  // Throws lumen::Error beyond that.
  void rollback(int n_tokens);
  int max_rollback() const;
  // How many steps rollback can undo right now.
  int rollback_available() const;

  bool can_terminate() const;   // the text so far is a complete sentence of the grammar
  bool is_terminated() const;   // an end-of-generation token was accepted

  // Jump-forward: the longest byte string every continuation must begin with (empty when the
  // next byte is not forced). Shorter when finding it would cost more than a mask may.
  std::string forced_continuation() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lumen::grammar
