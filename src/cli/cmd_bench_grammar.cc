// `lumen bench grammar`: structured output's costs on a real vocabulary: compile time, the
// first mask of a new grammar, and per-token mask times along seeded random walks, over the
// committed cases (bench/grammar_cases) or the files given. bench/compare_grammar.py runs the
// same cases and walks through llguidance and xgrammar (--walks-out).
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/grammar_bench_report.h"
#include "benchmark/grammar_cases.h"
#include "benchmark/grammar_walks.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "util/error.h"

namespace lumen::cli {
namespace {

struct GrammarBenchOptions {
  std::string model;
  std::string cases_dir;
  std::vector<std::string> grammars, schemas, regexes;
  benchmark::GrammarWalkOptions walk;
  bool json = false;
  std::string walks_out;
};

// The committed cases: ./bench/grammar_cases from a checkout, else the source tree's.
std::string default_cases_dir() {
  if (std::filesystem::is_directory("bench/grammar_cases")) return "bench/grammar_cases";
  return std::string(LUMEN_SOURCE_DIR) + "/bench/grammar_cases";
}

std::vector<benchmark::GrammarCase> selected_cases(const GrammarBenchOptions& options) {
  std::vector<benchmark::GrammarCase> cases;
  for (const auto& p : options.schemas) cases.push_back(benchmark::read_grammar_case(p, "json_schema"));
  for (const auto& p : options.grammars) cases.push_back(benchmark::read_grammar_case(p, "gbnf"));
  for (const auto& p : options.regexes) cases.push_back(benchmark::read_grammar_case(p, "regex"));
  if (cases.empty() || !options.cases_dir.empty())
    for (auto& c : benchmark::read_grammar_cases(options.cases_dir.empty() ? default_cases_dir() : options.cases_dir))
      cases.push_back(std::move(c));
  return cases;
}

void run_grammar_bench(const GrammarBenchOptions& options) {
  benchmark::GrammarBenchRun run;
  run.model = resolve_model_path(options.model);
  run.options = options.walk;
  const std::vector<benchmark::GrammarCase> cases = selected_cases(options);

  const benchmark::TimedVocabulary built = benchmark::model_grammar_vocabulary(run.model);
  const auto& vocabulary = built.vocabulary;
  run.vocabulary_build_ms = built.build_ms;
  run.vocabulary_tokens = vocabulary->size();

  for (const auto& c : cases) {
    if (!options.json) std::fprintf(stderr, "%s...\n", c.name.c_str());
    run.cases.push_back(benchmark::measure_grammar_case(c, vocabulary, options.walk));
  }
  if (options.json) {
    std::printf("%s\n", benchmark::grammar_bench_json(run).dump(2).c_str());
  } else {
    std::printf("%s", benchmark::grammar_bench_table(run).c_str());
  }
  if (!options.walks_out.empty()) {
    std::ofstream out(options.walks_out);
    out << benchmark::grammar_walks_json(run, cases, *vocabulary).dump();
    if (!out) fail("cannot write {}", options.walks_out);
  }
}

}  // namespace

void add_bench_grammar_command(CLI::App* bench) {
  auto options = std::make_shared<GrammarBenchOptions>();
  CLI::App* cmd = bench->add_subcommand(
      "grammar", "Structured output: grammar compile time and next-token mask times on a real vocabulary");
  cmd->add_option("-m,--model", options->model, "GGUF model whose vocabulary is used (default: the default model)");
  cmd->add_option("--cases", options->cases_dir,
                  "Directory of cases (*.schema.json, *.gbnf, *.regex; default: bench/grammar_cases)");
  cmd->add_option("--schema", options->schemas, "JSON Schema file(s) to measure instead of the default cases");
  cmd->add_option("--grammar", options->grammars, "GBNF file(s) to measure instead of the default cases");
  cmd->add_option("--regex", options->regexes, "File(s) whose first line is a regex to measure");
  cmd->add_option("--walks", options->walk.walks, "Random walks per case")->capture_default_str()->check(CLI::Range(1, 100000));
  cmd->add_option("--max-tokens", options->walk.max_tokens, "Tokens per walk at most")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  cmd->add_option("--seed", options->walk.seed, "Seed of the walks")->capture_default_str();
  cmd->add_flag("--json", options->json, "Print JSON");
  cmd->add_option("--walks-out", options->walks_out,
                  "Write the vocabulary and every walk's tokens here (bench/compare_grammar.py replays them)");
  cmd->callback([options] { run_grammar_bench(*options); });
}

}  // namespace lumen::cli
