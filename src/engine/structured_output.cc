#include "engine/structured_output.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "grammar/json_schema_to_gbnf.h"
#include "grammar/regex_to_gbnf.h"
#include "util/error.h"

namespace lumen::engine {

std::string grammar_text(const StructuredOutputs& constraint) {
  if (constraint.grammar) return *constraint.grammar;
  if (constraint.regex) return grammar::regex_to_gbnf(*constraint.regex);
  if (constraint.choice) return grammar::choice_to_gbnf(*constraint.choice);
  grammar::JsonSchemaOptions options;
  options.compact_whitespace = constraint.compact_whitespace;
  if (constraint.json_object) return grammar::json_object_gbnf(options);
  // From the text, so properties keep the order the schema declares them in.
  if (constraint.json) return grammar::json_schema_text_to_gbnf(*constraint.json, options);
  return {};
}

std::shared_ptr<const grammar::TokenVocabulary> grammar_vocabulary(const tokenizer::Tokenizer& tokenizer,
                                                                   const std::vector<std::string>& control_tokens) {
  const auto& vocab = tokenizer.vocab();
  const auto n = static_cast<int32_t>(vocab.size());
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<bool> unusable(static_cast<size_t>(n), false);
  for (int32_t id = 0; id < n; ++id) {
    bytes[static_cast<size_t>(id)] = tokenizer.token_bytes(id);
    if (tokenizer.is_special(id) && std::find(control_tokens.begin(), control_tokens.end(),
                                              bytes[static_cast<size_t>(id)]) == control_tokens.end()) {
      unusable[static_cast<size_t>(id)] = true;
      bytes[static_cast<size_t>(id)].clear();
      continue;
    }
    // A token that adds no text would let a sequence loop forever without advancing the
    // grammar.
    if (bytes[static_cast<size_t>(id)].empty()) unusable[static_cast<size_t>(id)] = true;
  }
  return std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), std::move(unusable),
                                                          vocab.end_of_generation);
}

GrammarCompiler::GrammarCompiler(const tokenizer::Tokenizer& tokenizer, size_t capacity, size_t cache_bytes)
    : tokenizer_(tokenizer), capacity_(capacity), cache_budget_(std::make_shared<grammar::CacheBudget>(cache_bytes)) {}

size_t GrammarCompiler::cached() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

std::shared_ptr<const grammar::CompiledGrammar> GrammarCompiler::compile(const StructuredOutputs& constraint) {
  if (constraint.count() == 0) return nullptr;
  const std::string grammar = grammar_text(constraint);
  std::vector<std::string> control_tokens = constraint.control_tokens;
  std::sort(control_tokens.begin(), control_tokens.end());
  control_tokens.erase(std::unique(control_tokens.begin(), control_tokens.end()), control_tokens.end());
  // The cache key: the grammar, and the control tokens it may write (after a NUL, which no
  // GBNF text holds).
  std::string text = grammar;
  for (const std::string& token : control_tokens) text += '\0' + token;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
  {
    std::lock_guard lock(mutex_);
    if (auto it = by_text_.find(text); it != by_text_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      return it->second->second;
    }
    vocabulary = vocabulary_for(control_tokens);
  }
  // Outside the lock: two threads compiling the same new grammar both compile it (the second
  // result replaces nothing), which costs less than serializing every compile.
  auto compiled = grammar::compile_grammar(grammar::parse_gbnf(grammar), vocabulary, cache_budget_);
  {
    // Its first mask, here on the caller's thread: a grammar whose very first mask is over
    // budget is refused now (a 400), and the caches it builds serve its requests' first step.
    grammar::GrammarMatcher probe(compiled, 0);
    std::vector<uint32_t> mask(grammar::bitmask_words(vocabulary->size()));
    probe.fill_next_token_bitmask(mask);
  }
  std::lock_guard lock(mutex_);
  if (!by_text_.contains(text)) {
    lru_.emplace_front(text, compiled);
    by_text_[text] = lru_.begin();
    while (lru_.size() > capacity_) {
      by_text_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return compiled;
}

std::shared_ptr<const grammar::TokenVocabulary> GrammarCompiler::vocabulary_for(
    const std::vector<std::string>& control_tokens) {
  auto it = vocabularies_.find(control_tokens);
  if (it != vocabularies_.end()) return it->second;
  // A server uses one or two sets; a library caller naming many gets them rebuilt rather than
  // kept without bound (compiled grammars hold their own).
  constexpr size_t kMaxVocabularies = 4;
  if (vocabularies_.size() >= kMaxVocabularies) vocabularies_.clear();
  return vocabularies_[control_tokens] = grammar_vocabulary(tokenizer_, control_tokens);
}

GrammarMask::GrammarMask(std::shared_ptr<const grammar::CompiledGrammar> grammar, size_t vocabulary_size,
                         std::shared_ptr<grammar::MaskAllowance> allowance)
    : matcher_(std::move(grammar)), vocabulary_size_(vocabulary_size) {
  if (allowance) matcher_.share_mask_allowance(std::move(allowance));
}

void GrammarMask::prepare(size_t vocab_size) {
  const size_t grammar_words = grammar::bitmask_words(vocabulary_size_);
  bitmask_.assign(std::max(grammar_words, grammar::bitmask_words(vocab_size)), 0);
  // Bits past the vocabulary in its last word are the matcher's to clear; the words after it
  // stay zero.
  failure_ = nullptr;
  try {
    matcher_.fill_next_token_bitmask(std::span(bitmask_).first(grammar_words));
  } catch (const grammar::GrammarBudgetError&) {
    failure_ = std::current_exception();
    throw;
  }
  prepared_ = true;
}

void GrammarMask::apply(std::span<float> logits) {
  if (failure_) std::rethrow_exception(failure_);  // the request ends with this error
  if (!prepared_ || bitmask_.size() < grammar::bitmask_words(logits.size())) prepare(logits.size());
  prepared_ = false;  // one apply per state: the next row follows an accepted token
  constexpr float kBanned = -std::numeric_limits<float>::infinity();
  for (size_t word = 0; word < bitmask_.size(); ++word) {
    const uint32_t bits = bitmask_[word];
    if (bits == ~uint32_t{0}) continue;
    const size_t first = word * 32;
    const size_t end = std::min(first + 32, logits.size());
    if (bits == 0) {  // the common case outside strings: nothing in the word is allowed
      std::fill(logits.begin() + static_cast<std::ptrdiff_t>(first), logits.begin() + static_cast<std::ptrdiff_t>(end),
                kBanned);
      continue;
    }
    for (size_t id = first; id < end; ++id) {
      if (!((bits >> (id - first)) & 1u)) logits[id] = kBanned;
    }
  }
}

void GrammarMask::accept(int32_t token) {
  // The sampler draws only tokens the mask allowed; a token from elsewhere (a caller's forced
  // token) that the grammar refuses is an error, not a silent divergence.
  prepared_ = false;
  failure_ = nullptr;
  if (!matcher_.accept_token(token)) fail("the grammar does not allow token {} here", token);
}

size_t GrammarMask::allowed_prefix(std::span<const int32_t> tokens) const {
  grammar::GrammarMatcher trial = matcher_;  // a copy shares the stacks: cheap
  size_t n = 0;
  while (n < tokens.size() && trial.accept_token(tokens[n])) ++n;
  return n;
}

}  // namespace lumen::engine
