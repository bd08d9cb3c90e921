#pragma once
// What `lumen bench grammar` prints: a text table (one row per case) or a JSON object, and
// the walks file that bench/compare_grammar.py replays through llguidance and xgrammar (the
// vocabulary's bytes and every case's token sequences, so the peers see the same tokens).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "benchmark/grammar_cases.h"
#include "benchmark/grammar_walks.h"
#include "grammar/token_vocabulary.h"

namespace lumen::benchmark {

struct GrammarBenchRun {
  std::string model;
  size_t vocabulary_tokens = 0;
  double vocabulary_build_ms = 0;
  GrammarWalkOptions options;
  std::vector<GrammarCaseTimes> cases;
};

std::string grammar_bench_table(const GrammarBenchRun& run);
nlohmann::json grammar_bench_json(const GrammarBenchRun& run);

// The walks file: {"model", "vocabulary": {"tokens": [hex bytes per id], "unusable": [ids],
// "end_of_generation": [ids]}, "cases": [{"name", "kind", "source", "gbnf", "walks"}]}.
nlohmann::json grammar_walks_json(const GrammarBenchRun& run, const std::vector<GrammarCase>& cases,
                                  const grammar::TokenVocabulary& vocab);

}  // namespace lumen::benchmark
