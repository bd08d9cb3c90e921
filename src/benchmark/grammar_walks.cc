#include "benchmark/grammar_walks.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <random>

#include "engine/structured_output.h"
#include "gguf/file.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace lumen::benchmark {
namespace {

using Clock = std::chrono::steady_clock;

double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

std::shared_ptr<const grammar::CompiledGrammar> compile(const std::string& gbnf,
                                                        const std::shared_ptr<const grammar::TokenVocabulary>& vocab) {
  return grammar::compile_grammar(grammar::parse_gbnf(gbnf), vocab);
}

void allowed_tokens(std::span<const uint32_t> mask, std::vector<int32_t>& out) {
  out.clear();
  for (size_t word = 0; word < mask.size(); ++word)
    for (uint32_t bits = mask[word]; bits != 0; bits &= bits - 1)
      out.push_back(static_cast<int32_t>(word * 32 + static_cast<size_t>(__builtin_ctz(bits))));
}

// A model closes strings and moves on; a uniform pick among 49k allowed tokens almost never
// does (the closing quote is one token of thousands), so half the picks are among the
// allowed one-byte tokens (punctuation, digits, quotes): the walks then reach the grammar's
// structure (keys, nested objects, arrays) the way real outputs do.
int32_t pick(const std::vector<int32_t>& allowed, const grammar::TokenVocabulary& vocab, std::mt19937& rng,
             std::vector<int32_t>& short_tokens) {
  if (std::bernoulli_distribution(0.5)(rng)) {
    short_tokens.clear();
    for (int32_t id : allowed)
      if (vocab.token_bytes(id).size() <= 1) short_tokens.push_back(id);
    if (!short_tokens.empty())
      return short_tokens[std::uniform_int_distribution<size_t>(0, short_tokens.size() - 1)(rng)];
  }
  return allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
}

}  // namespace

GrammarCaseTimes measure_grammar_case(const GrammarCase& c, const std::shared_ptr<const grammar::TokenVocabulary>& vocab,
                                      const GrammarWalkOptions& options) {
  GrammarCaseTimes times;
  times.name = c.name;
  times.kind = c.kind;
  const StructuredOutputs constraint = c.constraint();
  times.gbnf = engine::grammar_text(constraint);

  std::vector<double> compile_us;
  std::shared_ptr<const grammar::CompiledGrammar> compiled;
  for (int i = 0; i < std::max(1, options.compiles); ++i) {
    auto t = Clock::now();
    compiled = compile(engine::grammar_text(constraint), vocab);
    compile_us.push_back(us_since(t));
  }
  std::sort(compile_us.begin(), compile_us.end());
  times.compile_us = compile_us[compile_us.size() / 2];

  // The last compile is fresh: no mask has run on it yet.
  std::mt19937 rng(options.seed);
  std::vector<uint32_t> mask(grammar::bitmask_words(vocab->size()));
  std::vector<int32_t> allowed, short_tokens;
  std::vector<double> cold;
  for (int w = 0; w < options.walks; ++w) {
    grammar::GrammarMatcher matcher(compiled);
    std::vector<int32_t>& tokens = times.walks.emplace_back();
    for (int s = 0; s < options.max_tokens; ++s) {
      const double cpu = thread_cpu_ms();
      auto t = Clock::now();
      matcher.fill_next_token_bitmask(mask);
      cold.push_back(us_since(t));
      const double cpu_ms = thread_cpu_ms() - cpu;
      times.cold_cpu_total_ms += cpu_ms;
      times.cold_cpu_max_ms = std::max(times.cold_cpu_max_ms, cpu_ms);
      allowed_tokens(mask, allowed);
      if (allowed.empty()) break;
      int32_t token = pick(allowed, *vocab, rng, short_tokens);
      if (!matcher.accept_token(token)) fail("{}: the matcher refused token {} its mask allowed", c.name, token);
      tokens.push_back(token);
      if (matcher.is_terminated()) break;
    }
  }
  times.first_mask_us = cold.empty() ? 0 : cold.front();
  for (double us : cold) times.cold_total_ms += us / 1000;
  times.cold = summarize(cold);

  std::vector<double> warm;
  for (const auto& tokens : times.walks) {
    grammar::GrammarMatcher matcher(compiled);
    for (int32_t token : tokens) {
      auto t = Clock::now();
      matcher.fill_next_token_bitmask(mask);
      warm.push_back(us_since(t));
      matcher.accept_token(token);
    }
  }
  times.warm = summarize(warm);
  return times;
}

TimedVocabulary model_grammar_vocabulary(const std::string& model_path) {
  using Clock = std::chrono::steady_clock;
  const auto tokenizer = tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(model_path));
  const auto t = Clock::now();
  TimedVocabulary out;
  out.vocabulary = engine::grammar_vocabulary(tokenizer);
  out.build_ms = std::chrono::duration<double, std::milli>(Clock::now() - t).count();
  return out;
}

}  // namespace lumen::benchmark
