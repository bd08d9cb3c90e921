#pragma once
// Writing GBNF text: literals and character classes escaped so that every byte of the input
// means itself, and a set of named rules (deduplicated, with unique valid names). Shared by
// the JSON Schema, regex and choice converters.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lumen::grammar {

// `"..."`: matches exactly `text` (UTF-8). Throws GrammarError(`offset`) when `text` is not
// valid UTF-8 (GBNF terminals are code points).
std::string gbnf_literal(std::string_view text);

// A set of code points as closed ranges.
using CodePointRanges = std::vector<std::pair<uint32_t, uint32_t>>;
constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// Sorted, merged, surrogates (not encodable in UTF-8) removed.
CodePointRanges normalize_ranges(CodePointRanges ranges);
// Every code point not in `ranges` (surrogates excluded).
CodePointRanges complement_ranges(const CodePointRanges& ranges);
// `[...]` for a non-empty normalized set.
std::string gbnf_char_class(const CodePointRanges& ranges);

// Decodes one UTF-8 code point at `pos`, advancing it; returns false on invalid UTF-8.
bool decode_utf8(std::string_view text, size_t& pos, uint32_t& code_point);
void append_utf8(std::string& out, uint32_t code_point);

// The rules of one grammar under construction. Names are [a-zA-Z0-9-]; a hint that is not is
// rewritten. Adding a body identical to an existing rule's returns the existing name (the
// shared `space`, `char`, ... rules come out once).
class GbnfRules {
 public:
  // Total size limit of the grammar text: beyond it the converter refuses the input.
  // `name_prefix`: starts every rule's name (several converted grammars embedded in one then
  // never share a name).
  explicit GbnfRules(size_t max_bytes = 4 << 20, std::string name_prefix = {})
      : max_bytes_(max_bytes), name_prefix_(std::move(name_prefix)) {}

  std::string add(std::string_view hint, std::string body);
  // A name for a rule whose body is known later (recursive $ref).
  std::string reserve(std::string_view hint);
  void define(const std::string& name, std::string body);

  // All rules, one a line; `root` first. Throws GrammarError if a reserved rule is undefined.
  std::string text(const std::string& root) const;

 private:
  std::string unique_name(std::string_view hint);
  void account(size_t bytes);

  size_t max_bytes_;
  std::string name_prefix_;
  size_t bytes_ = 0;
  std::map<std::string, std::string> body_of_;      // name -> body ("" while reserved)
  std::map<std::string, std::string> name_of_body_;  // body -> name (dedup)
};

}  // namespace lumen::grammar
