#include "benchmark/grammar_bench_report.h"

#include <fmt/format.h>

namespace lumen::benchmark {
namespace {

nlohmann::json summary_json(const LatencySummary& s) {
  return {{"count", s.count}, {"p50_us", s.p50}, {"p99_us", s.p99}, {"max_us", s.max}, {"mean_us", s.mean}};
}

std::string hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char b : bytes) {
    out.push_back(digits[b >> 4]);
    out.push_back(digits[b & 15]);
  }
  return out;
}

}  // namespace

std::string grammar_bench_table(const GrammarBenchRun& run) {
  std::string out = fmt::format("model {} ({} tokens, vocabulary built in {:.0f} ms); {} walks of up to {} tokens, seed {}\n\n",
                                run.model, run.vocabulary_tokens, run.vocabulary_build_ms, run.options.walks,
                                run.options.max_tokens, run.options.seed);
  // Cold: the first pass over the walks on a fresh compiled grammar (cache builds included);
  // warm: the same walks again. The cold columns are the masks' CPU time (on a loaded machine
  // wall-clock maxima catch preemptions); the JSON has the wall-clock ones too.
  constexpr const char* kRow = "| {:<12} | {:<11} | {:>10} | {:>11} | {:>11} | {:>13} | {:>11} | {:>11} | {:>6} |\n";
  out += fmt::format(kRow, "case", "kind", "compile ms", "1st mask ms", "cold max ms", "cold total ms", "warm p50 us",
                     "warm p99 us", "masks");
  out += fmt::format(kRow, "---", "---", "---:", "---:", "---:", "---:", "---:", "---:", "---:");
  for (const GrammarCaseTimes& c : run.cases)
    out += fmt::format(kRow, c.name, c.kind, fmt::format("{:.2f}", c.compile_us / 1000),
                       fmt::format("{:.2f}", c.first_mask_us / 1000), fmt::format("{:.2f}", c.cold_cpu_max_ms),
                       fmt::format("{:.1f}", c.cold_cpu_total_ms),
                       fmt::format("{:.1f}", c.warm.p50),
                       fmt::format("{:.1f}", c.warm.p99), c.warm.count);
  return out;
}

nlohmann::json grammar_bench_json(const GrammarBenchRun& run) {
  nlohmann::json cases = nlohmann::json::array();
  for (const GrammarCaseTimes& c : run.cases)
    cases.push_back({{"name", c.name},
                     {"kind", c.kind},
                     {"compile_us", c.compile_us},
                     {"first_mask_us", c.first_mask_us},
                     {"cold_total_ms", c.cold_total_ms},
                     {"cold_cpu_total_ms", c.cold_cpu_total_ms},
                     {"cold_cpu_max_ms", c.cold_cpu_max_ms},
                     {"cold", summary_json(c.cold)},
                     {"warm", summary_json(c.warm)}});
  return {{"model", run.model},
          {"vocabulary", {{"tokens", run.vocabulary_tokens}, {"build_ms", run.vocabulary_build_ms}}},
          {"walks", {{"count", run.options.walks}, {"max_tokens", run.options.max_tokens}, {"seed", run.options.seed}}},
          {"cases", cases}};
}

nlohmann::json grammar_walks_json(const GrammarBenchRun& run, const std::vector<GrammarCase>& cases,
                                  const grammar::TokenVocabulary& vocab) {
  nlohmann::json tokens = nlohmann::json::array(), unusable = nlohmann::json::array();
  for (size_t id = 0; id < vocab.size(); ++id) {
    const auto i = static_cast<int32_t>(id);
    tokens.push_back(hex(vocab.token_bytes(i)));
    if (!vocab.is_grammar_token(i) && !vocab.is_end_of_generation(i)) unusable.push_back(i);
  }
  nlohmann::json out_cases = nlohmann::json::array();
  for (size_t k = 0; k < cases.size() && k < run.cases.size(); ++k)
    out_cases.push_back({{"name", cases[k].name},
                         {"kind", cases[k].kind},
                         {"source", cases[k].source},
                         {"gbnf", run.cases[k].gbnf},
                         {"walks", run.cases[k].walks}});
  return {{"model", run.model},
          {"vocabulary", {{"tokens", tokens}, {"unusable", unusable}, {"end_of_generation", vocab.end_of_generation()}}},
          {"cases", out_cases}};
}

}  // namespace lumen::benchmark
