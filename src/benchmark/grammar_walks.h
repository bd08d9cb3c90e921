#pragma once
// Times a grammar the way a request uses it: convert + parse + compile, then masks along
// random valid outputs. A walk asks for the next-token mask, picks an allowed token at random
// (seeded), accepts it, and goes on until the grammar ends or the walk is long enough.
//
// The first pass runs on a freshly compiled grammar, so its masks include the lazy cache
// builds of every grammar context the walks enter ("cold", what the first request with a new
// schema sees); the second pass replays the same token sequences on the same compiled grammar
// ("warm": every cache built, what a server sees once the schema is in use).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/grammar_cases.h"
#include "benchmark/latency_summary.h"
#include "grammar/token_vocabulary.h"

namespace lumen::benchmark {

struct GrammarWalkOptions {
  int walks = 16;
  int max_tokens = 128;
  uint32_t seed = 42;
  int compiles = 5;  // compile time: the median of this many compiles
};

struct GrammarCaseTimes {
  std::string name, kind;
  std::string gbnf;           // the grammar the case compiles to
  double compile_us = 0;      // conversion + parse + compile (median)
  double first_mask_us = 0;   // the very first mask of a fresh compiled grammar
  LatencySummary cold;        // every mask of the first pass (µs)
  double cold_total_ms = 0;   // their sum
  // The same masks in this thread's CPU time: on a loaded machine wall-clock maxima catch
  // preemptions (a 4 ms time slice), CPU time does not.
  double cold_cpu_total_ms = 0, cold_cpu_max_ms = 0;
  LatencySummary warm;        // the same walks again (µs)
  std::vector<std::vector<int32_t>> walks;  // the tokens each walk accepted
};

// The vocabulary of the model at `model_path` as the engine's grammars see it
// (engine::grammar_vocabulary), and the milliseconds building it took (reading the file and
// its tokenizer not counted): what the first constrained request on a model pays once.
struct TimedVocabulary {
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
  double build_ms = 0;
};
TimedVocabulary model_grammar_vocabulary(const std::string& model_path);

GrammarCaseTimes measure_grammar_case(const GrammarCase& c, const std::shared_ptr<const grammar::TokenVocabulary>& vocab,
                                      const GrammarWalkOptions& options);

}  // namespace lumen::benchmark
