// Choice -> GBNF: one literal per choice. Literals escape every byte that GBNF would read
// otherwise (quotes, backslashes, control characters), so any UTF-8 text is matched exactly.
#include <string>

#include "grammar/gbnf_writer.h"
#include "grammar/grammar.h"
#include "grammar/regex_to_gbnf.h"

namespace lumen::grammar {

std::string choice_to_gbnf(std::span<const std::string> choices) {
  if (choices.empty()) throw GrammarError("choice: the list of choices is empty", 0);
  std::string body;
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) body += " | ";
    try {
      body += gbnf_literal(choices[i]);
    } catch (const GrammarError& error) {
      throw GrammarError("choice " + std::to_string(i) + ": " + error.what(), 0);
    }
  }
  return "root ::= " + body + "\n";
}

}  // namespace lumen::grammar
