#include "benchmark/grammar_cases.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "util/error.h"

namespace lumen::benchmark {
namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail("cannot read {}", path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

StructuredOutputs GrammarCase::constraint() const {
  StructuredOutputs c;
  // JSON with whitespace between tokens: the grammar bench/compare_grammar.py times xgrammar's
  // any_whitespace=True against.
  c.compact_whitespace = false;
  if (kind == "json_schema") c.json = source;
  else if (kind == "regex") c.regex = source;
  else c.grammar = source;
  return c;
}

GrammarCase read_grammar_case(const std::string& path, const std::string& kind_hint) {
  const std::string file = std::filesystem::path(path).filename().string();
  GrammarCase c;
  for (const char* ext : {".schema.json", ".json", ".gbnf", ".regex"}) {
    if (!ends_with(file, ext)) continue;
    c.name = file.substr(0, file.size() - std::char_traits<char>::length(ext));
    c.kind = ext[1] == 'g' ? "gbnf" : ext[1] == 'r' ? "regex" : "json_schema";
    break;
  }
  if (!kind_hint.empty()) {
    c.kind = kind_hint;
    if (c.name.empty()) c.name = std::filesystem::path(path).stem().string();
  }
  if (c.kind.empty()) fail("{}: a grammar case is a .schema.json, .gbnf or .regex file", path);
  c.source = read_all(path);
  if (c.kind == "regex") c.source = c.source.substr(0, c.source.find('\n'));
  return c;
}

std::vector<GrammarCase> read_grammar_cases(const std::string& dir) {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (ends_with(name, ".json") || ends_with(name, ".gbnf") || ends_with(name, ".regex"))
      paths.push_back(entry.path().string());
  }
  if (paths.empty()) fail("no grammar cases (.schema.json, .gbnf, .regex) in {}", dir);
  std::sort(paths.begin(), paths.end());
  std::vector<GrammarCase> cases;
  for (const std::string& p : paths) cases.push_back(read_grammar_case(p));
  return cases;
}

}  // namespace lumen::benchmark
