#pragma once
// A compiled PCRE2 pattern over UTF-8 with Unicode properties (\p{L}, \p{N}, case folding),
// JIT-compiled where the platform allows. One object is shared by every thread that
// tokenizes; each search brings its own scratch space (pcre2 match data), so searches on one
// pattern may run concurrently.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::tokenizer {

class UnicodeRegex {
 public:
  // Throws lumen::Error when the pattern does not compile.
  explicit UnicodeRegex(const std::string& pattern);
  ~UnicodeRegex();
  UnicodeRegex(UnicodeRegex&&) noexcept;
  UnicodeRegex& operator=(UnicodeRegex&&) noexcept;
  UnicodeRegex(const UnicodeRegex&) = delete;
  UnicodeRegex& operator=(const UnicodeRegex&) = delete;

  const std::string& pattern() const { return pattern_; }

  // The scratch space of searches with one regex on one thread; reuse it across the pieces of
  // a text (creating it costs allocations).
  class Matcher {
   public:
    explicit Matcher(const UnicodeRegex& regex);
    ~Matcher();
    Matcher(const Matcher&) = delete;
    Matcher& operator=(const Matcher&) = delete;

    // Splits valid UTF-8 `text` into the matches of the pattern and the stretches between
    // them (Hugging Face's "isolated" split behaviour: nothing is dropped, order is kept) and
    // appends the pieces to `out`. Throws lumen::Error if the regex engine gives up.
    void split_isolated(std::string_view text, std::vector<std::string_view>& out);

   private:
    struct State;
    const UnicodeRegex* regex_;
    std::unique_ptr<State> state_;
  };

  // One-off split_isolated with its own Matcher.
  void split_isolated(std::string_view text, std::vector<std::string_view>& out) const;

 private:
  struct Compiled;
  std::string pattern_;
  std::unique_ptr<Compiled> compiled_;
};

// Rewrites \s and \S in a pattern written in Hugging Face's (Oniguruma's) dialect into classes
// PCRE2 reads the same way: Oniguruma's Unicode \s also matches U+0085 (NEXT LINE), which
// PCRE2's \s with UCP does not. Escapes inside and outside [...] are handled.
std::string oniguruma_whitespace_to_pcre2(std::string_view pattern);

}  // namespace lumen::tokenizer
