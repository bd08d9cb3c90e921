#pragma once
// Constrained output in the engine: a request's StructuredOutputs becomes a grammar compiled
// for the model's vocabulary (cached, since clients repeat the same schema), and each of its
// sequences samples through a GrammarMask that sets every token the grammar does not allow
// next to -inf.
//
// Compiling happens on the caller's thread in add_request (an invalid schema or grammar is the
// caller's error, thrown there, and a slow compile never stalls the engine's loop).
#include <cstdint>
#include <exception>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/request_group.h"
#include "engine/scheduler.h"
#include "grammar/grammar_matcher.h"
#include "lumen/sampling_params.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace lumen::engine {

// The GBNF a constraint stands for (the converters in src/grammar). Throws
// grammar::GrammarError for an invalid schema, regex or choice list.
std::string grammar_text(const StructuredOutputs& constraint);

// The model's vocabulary as grammars see it: every token's bytes; control and special tokens
// are never allowed (client text is plain text) except the control tokens `control_tokens`
// names by their text (a server's own constraint: StructuredOutputs::control_tokens), which
// then stand for that text; the end-of-generation ids end the grammar.
std::shared_ptr<const grammar::TokenVocabulary> grammar_vocabulary(const tokenizer::Tokenizer& tokenizer,
                                                                   const std::vector<std::string>& control_tokens = {});

class GrammarCompiler {
 public:
  // `capacity`: compiled grammars kept (least recently used dropped first).
  // `cache_bytes`: the memory every compiled grammar's mask caches share (grammar/cache_budget.h).
  explicit GrammarCompiler(const tokenizer::Tokenizer& tokenizer, size_t capacity = 64,
                           size_t cache_bytes = size_t{512} << 20);

  // The compiled grammar of a constraint; nullptr when it sets none. Thread-safe. Throws
  // lumen::Error (grammar::GrammarError) when the constraint is invalid, and
  // grammar::GrammarBudgetError when its first mask already costs more than a mask may
  // (grammar/mask_work.h): a grammar known to be too expensive is the client's 400, before
  // it reaches the engine.
  std::shared_ptr<const grammar::CompiledGrammar> compile(const StructuredOutputs& constraint);

  size_t cached() const;

 private:
  using Entry = std::pair<std::string, std::shared_ptr<const grammar::CompiledGrammar>>;
  const tokenizer::Tokenizer& tokenizer_;
  const size_t capacity_;
  const std::shared_ptr<grammar::CacheBudget> cache_budget_;
  mutable std::mutex mutex_;
  // The vocabulary for one set of allowed control tokens (sorted; empty for clients'
  // constraints), built on first use.
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary_for(const std::vector<std::string>& control_tokens);
  std::map<std::vector<std::string>, std::shared_ptr<const grammar::TokenVocabulary>> vocabularies_;
  std::list<Entry> lru_;                                        // most recent first
  std::unordered_map<std::string, std::list<Entry>::iterator> by_text_;
};

// The sampler's hook for one sequence: the grammar's next-token mask, advanced by every
// accepted token.
class GrammarMask final : public sampling::LogitMask {
 public:
  // `vocabulary_size`: the grammar's vocabulary (the tokenizer's); logits rows may be longer
  // (padded embeddings), and the tokens past it are never allowed.
  // `allowance`: the mask work budget its request's sequences share (grammar/mask_work.h);
  // null: its own.
  GrammarMask(std::shared_ptr<const grammar::CompiledGrammar> grammar, size_t vocabulary_size,
              std::shared_ptr<grammar::MaskAllowance> allowance = nullptr);
  void apply(std::span<float> logits) override;
  void accept(int32_t token) override;
  size_t allowed_prefix(std::span<const int32_t> tokens) const override;
  std::string forced_continuation() const override { return matcher_.forced_continuation(); }
  void prepare(size_t vocab_size) override;
  bool complete() const override { return matcher_.is_terminated(); }

 private:
  grammar::GrammarMatcher matcher_;
  size_t vocabulary_size_;
  std::vector<uint32_t> bitmask_;
  bool prepared_ = false;  // bitmask_ holds the mask of the matcher's current state
  // Why prepare() failed for the current state (a grammar budget): apply() throws it again
  // rather than spend the same budget twice on the engine's thread.
  std::exception_ptr failure_;
};

}  // namespace lumen::engine
