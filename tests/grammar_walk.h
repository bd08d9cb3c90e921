#pragma once
// Test helpers that run a GBNF grammar over bytes with the real matcher: whether it accepts a
// whole string, and random strings it produces (a walk choosing random allowed bytes until the
// grammar may end and a coin says stop). The vocabulary is the 256 single bytes plus an
// end-of-generation token.
#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/grammar.h"
#include "grammar/grammar_matcher.h"
#include "grammar/token_vocabulary.h"

namespace lumen::testing {

constexpr int32_t kWalkEndToken = 256;

inline std::shared_ptr<const grammar::TokenVocabulary> byte_vocabulary() {
  static const auto vocabulary = [] {
    std::vector<std::string> bytes;
    for (int b = 0; b < 256; ++b) bytes.emplace_back(1, static_cast<char>(b));
    bytes.emplace_back("");  // end of generation
    return std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), std::vector<bool>{},
                                                            std::vector<int32_t>{kWalkEndToken});
  }();
  return vocabulary;
}

inline std::shared_ptr<const grammar::CompiledGrammar> compile_for_bytes(std::string_view gbnf) {
  return grammar::compile_grammar(grammar::parse_gbnf(gbnf), byte_vocabulary());
}

// Whether the grammar accepts all of `text` and may end there.
inline bool grammar_accepts(const std::shared_ptr<const grammar::CompiledGrammar>& compiled, std::string_view text) {
  grammar::GrammarMatcher matcher(compiled);
  for (char c : text) {
    if (!matcher.accept_bytes(std::string_view(&c, 1))) return false;
  }
  return matcher.can_terminate();
}

// One random string of the grammar, or nullopt when the walk ran past `max_bytes` (or hit a
// dead end: `dead_end` is then set, a bug in the grammar or the matcher). Bytes that close
// things (quotes, brackets) are preferred more and more as the text grows, so walks end.
inline std::optional<std::string> random_walk(const std::shared_ptr<const grammar::CompiledGrammar>& compiled,
                                              std::mt19937_64& rng, size_t max_bytes, bool* dead_end = nullptr) {
  grammar::GrammarMatcher matcher(compiled);
  std::vector<uint32_t> mask(grammar::bitmask_words(257));
  std::string text;
  std::uniform_real_distribution<double> coin(0.0, 1.0);
  while (text.size() <= max_bytes) {
    matcher.fill_next_token_bitmask(mask);
    const auto allowed = [&](int32_t id) { return (mask[static_cast<size_t>(id) / 32] >> (id % 32)) & 1u; };
    std::vector<int> bytes, closers;
    for (int b = 0; b < 256; ++b) {
      if (!allowed(b)) continue;
      // Fewer non-ASCII picks (a lead byte forces its continuation bytes anyway).
      if (b >= 0x80 && coin(rng) < 0.9) continue;
      bytes.push_back(b);
      if (b == '"' || b == '}' || b == ']') closers.push_back(b);
    }
    if (bytes.empty()) {
      for (int b = 0x80; b < 256; ++b) {
        if (allowed(b)) bytes.push_back(b);
      }
    }
    const bool can_end = allowed(kWalkEndToken);
    if (can_end && (bytes.empty() || coin(rng) < 0.3)) return text;
    if (bytes.empty()) {
      if (dead_end) *dead_end = true;
      return std::nullopt;
    }
    const double pressure = static_cast<double>(text.size()) / static_cast<double>(max_bytes);
    const auto& pool = !closers.empty() && coin(rng) < 0.05 + pressure ? closers : bytes;
    const char next = static_cast<char>(pool[std::uniform_int_distribution<size_t>(0, pool.size() - 1)(rng)]);
    if (!matcher.accept_bytes(std::string_view(&next, 1))) {
      if (dead_end) *dead_end = true;  // the mask allowed a byte the matcher refuses
      return std::nullopt;
    }
    text += next;
  }
  return std::nullopt;
}

}  // namespace lumen::testing
