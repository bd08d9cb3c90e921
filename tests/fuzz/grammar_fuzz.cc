// Fuzzes the GBNF parser, the converters and the matcher: the input is a grammar (or a JSON
// Schema when it starts with '{', a regex after a leading '/'), then (after a NUL byte) text fed
// to a matcher in small tokens, with a mask, a jump-forward and a rollback between them. Bad
// input must end in GrammarError, never a crash, a hang or unbounded memory: clients send all
// three.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_to_gbnf.h"
#include "grammar/regex_to_gbnf.h"

namespace {

std::shared_ptr<const lumen::grammar::TokenVocabulary> vocabulary() {
  static auto vocab = [] {
    std::vector<std::string> tokens;
    for (int b = 0; b < 256; ++b) tokens.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"{\"", "\":", "\", \"", "true", "null", "\xE3\x81", "\x82\xE3", "\xE6\x97\xA5", "ab", "abc",
                          " ", "  ", "\n", "[1", "0,", "\"}", "é", ""})
      tokens.push_back(t);
    tokens.push_back("<eos>");
    int32_t eos = static_cast<int32_t>(tokens.size() - 1);
    return std::make_shared<const lumen::grammar::TokenVocabulary>(tokens, std::vector<bool>{}, std::vector<int32_t>{eos});
  }();
  return vocab;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view input(reinterpret_cast<const char*>(data), size);
  size_t split = input.find('\0');
  std::string_view text = input.substr(0, split);
  std::string_view feed = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
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
  auto vocab = vocabulary();
  auto compiled = lumen::grammar::compile_grammar(grammar, vocab);
  lumen::grammar::GrammarMatcher matcher(compiled, 8);
  std::vector<uint32_t> mask(lumen::grammar::bitmask_words(vocab->size()));
  size_t steps = 0;
  for (size_t i = 0; i < feed.size() && steps < 64; ++steps) {
    uint8_t control = static_cast<uint8_t>(feed[i++]);
    if (control % 7 == 0) {
      matcher.fill_next_token_bitmask(mask);
      (void)matcher.forced_continuation();
    }
    if (control % 11 == 0 && matcher.rollback_available() > 0) matcher.rollback(1);
    if (control & 0x80) {
      matcher.accept_token(static_cast<int32_t>(control % vocab->size()));
    } else {
      size_t n = std::min<size_t>(1 + control % 4, feed.size() - i);
      matcher.accept_bytes(feed.substr(i, n));
      i += n;
    }
  }
  matcher.fill_next_token_bitmask(mask);
  (void)matcher.can_terminate();
  return 0;
}
