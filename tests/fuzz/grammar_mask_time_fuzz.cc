// Fuzzes what one next-token mask costs (issue 47): the input is a grammar (a JSON Schema when
// it starts with '{', a regex after a leading '/', else GBNF), then (after a NUL byte) text fed
// to the matcher a few bytes at a time, with a mask and a jump-forward before each piece. Every
// mask must come back or throw GrammarBudgetError within kMaxMaskSeconds of CPU, whatever the grammar
// and the text: an input that makes one mask (or jump-forward) slower aborts, with the time,
// so libFuzzer keeps it as a crash. Inputs that merely fail to parse are fine.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/mask_work.h"
#include "grammar/regex_to_gbnf.h"

namespace {

// The bound, under ASan+UBSan and libFuzzer's coverage (several times slower than a Release
// build). With the limits below a mask is refused well before it: the seeds' hostile grammars
// take at most 0.3 s for the whole input in a Release build (about 30 s a mask before issue 47).
constexpr double kMaxMaskSeconds = 3.0;
// A vocabulary of ~1,000 tokens has a trie ~50x smaller than a real model's, so the work limit
// is scaled down with it (the engine's is MaskLimits{}).
lumen::grammar::MaskLimits limits() {
  lumen::grammar::MaskLimits limits;
  limits.work = uint64_t{1} << 20;
  limits.dfa_bytes = size_t{16} << 20;
  return limits;
}

// Every byte, every two-letter lowercase pair, and some longer pieces of JSON and text: enough
// multi-byte tokens that a mask walks a real trie (uncertain tokens, context caches).
std::shared_ptr<const lumen::grammar::TokenVocabulary> vocabulary() {
  static auto vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (char a = 'a'; a <= 'z'; ++a)
      for (char b = 'a'; b <= 'z'; ++b) tokens.push_back(std::string{a, b});
    for (const char* t : {"{\"",  "\":", "\", \"", "true", "null", "false", "aaaa", "aaaaaaaa", "xxxx", "abc", "   ",
                          "\n\n", "[1",  "0,",     "\"}",  "é",    "日本",  "\\n",  "\\\"",     "0123", "-1"})
      tokens.push_back(t);
    tokens.push_back("<eos>");
    const auto eos = static_cast<int32_t>(tokens.size() - 1);
    return std::make_shared<const lumen::grammar::TokenVocabulary>(tokens, std::vector<bool>{},
                                                                   std::vector<int32_t>{eos});
  }();
  return vocab;
}

// This thread's CPU time: wall time on a shared machine would measure the neighbours too.
double thread_cpu_seconds() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_nsec) * 1e-9;
}

template <typename F>
void within_bound(const char* what, F&& f) {
  const double started = thread_cpu_seconds();
  f();
  const double seconds = thread_cpu_seconds() - started;
  if (seconds > kMaxMaskSeconds) {
    std::fprintf(stderr, "%s took %.3f s (bound %.1f s)\n", what, seconds, kMaxMaskSeconds);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view text = input.substr(0, split);
  const std::string_view feed = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  std::shared_ptr<const lumen::grammar::Grammar> grammar;
  try {
    if (text.starts_with('{')) {
      grammar = lumen::grammar::parse_gbnf(lumen::grammar::json_schema_text_to_gbnf(text));
    } else if (text.starts_with('/')) {
      grammar = lumen::grammar::parse_gbnf(lumen::grammar::regex_to_gbnf(text.substr(1)));
    } else {
      grammar = lumen::grammar::parse_gbnf(text);
    }
  } catch (const lumen::grammar::GrammarError&) {
    return 0;
  }
  const auto vocab = vocabulary();
  lumen::grammar::GrammarMatcher matcher(lumen::grammar::compile_grammar(grammar, vocab), 4);
  matcher.set_mask_limits(limits());
  std::vector<uint32_t> mask(lumen::grammar::bitmask_words(vocab->size()));
  for (size_t i = 0, steps = 0; steps < 16; ++steps) {
    bool refused = false;
    within_bound("a mask", [&] {
      try {
        matcher.fill_next_token_bitmask(mask);
      } catch (const lumen::grammar::GrammarBudgetError&) {
        refused = true;  // the engine ends this request: nothing more to measure
      }
    });
    if (refused) return 0;
    within_bound("a jump-forward", [&] { (void)matcher.forced_continuation(); });
    if (i >= feed.size()) break;
    // Up to 8 bytes of the text (refused bytes are skipped: the walk goes on from the state).
    const size_t n = std::min<size_t>(1 + static_cast<uint8_t>(feed[i]) % 8, feed.size() - i - 1);
    matcher.accept_bytes(feed.substr(i + 1, n));
    i += 1 + n;
  }
  return 0;
}
