#pragma once
// The cases `lumen bench grammar` measures: JSON Schemas, GBNF grammars and regexes read from
// files, each turned into the same StructuredOutputs a request would carry, so that the bench
// times the server's path (conversion, parsing, compiling, masks).
#include <string>
#include <vector>

#include "lumen/sampling_params.h"

namespace lumen::benchmark {

struct GrammarCase {
  std::string name;    // the file name without its extension ("order")
  std::string kind;    // "json_schema", "gbnf" or "regex"
  std::string source;  // the schema's JSON, the grammar or the pattern
  StructuredOutputs constraint() const;
};

// The case a file holds, by its extension: `.schema.json` (or `.json`), `.gbnf`, `.regex`
// (the first line is the pattern). Throws lumen::Error for another extension.
GrammarCase read_grammar_case(const std::string& path, const std::string& kind_hint = "");

// Every case file of a directory, in name order (README.md and other files skipped).
std::vector<GrammarCase> read_grammar_cases(const std::string& dir);

}  // namespace lumen::benchmark
