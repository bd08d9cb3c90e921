// Grammar mask micro-benchmark (not a Google Benchmark: it prints one JSON object).
//   grammar_mask_bench [model.gguf] [grammars_dir]
// For each grammar: parse + compile time on the model's vocabulary, then random walks through
// valid outputs (a random allowed token each step), timing fill_next_token_bitmask. The first
// walks build the lazy per-position caches ("cold"); the same walks again give the steady
// state ("warm"), what a server sees once a schema is in use.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "grammar/grammar_matcher.h"
#include "tokenizer/tokenizer.h"

using namespace lumen;
using Clock = std::chrono::steady_clock;

namespace {

double us_since(Clock::time_point t) { return std::chrono::duration<double, std::micro>(Clock::now() - t).count(); }

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Walks with a fixed seed; returns the mask times.
std::vector<double> walk(const std::shared_ptr<const grammar::CompiledGrammar>& compiled, size_t vocab_size, int walks,
                         int steps) {
  std::vector<double> times;
  std::mt19937 rng(42);
  std::vector<uint32_t> mask(grammar::bitmask_words(vocab_size));
  std::vector<int32_t> allowed;
  for (int w = 0; w < walks; ++w) {
    grammar::GrammarMatcher matcher(compiled);
    for (int s = 0; s < steps; ++s) {
      auto t = Clock::now();
      matcher.fill_next_token_bitmask(mask);
      times.push_back(us_since(t));
      allowed.clear();
      for (size_t word = 0; word < mask.size(); ++word)
        for (uint32_t bits = mask[word]; bits != 0; bits &= bits - 1)
          allowed.push_back(static_cast<int32_t>(word * 32 + static_cast<size_t>(__builtin_ctz(bits))));
      if (allowed.empty()) break;
      int32_t token = allowed[std::uniform_int_distribution<size_t>(0, allowed.size() - 1)(rng)];
      if (!matcher.accept_token(token) || matcher.is_terminated()) break;
    }
  }
  return times;
}

}  // namespace

int main(int argc, char** argv) {
  std::string home = std::getenv("HOME") ? std::getenv("HOME") : ".";
  std::string model = argc > 1 ? argv[1] : home + "/.cache/lumen/models/SmolLM2-135M-Instruct.Q4_1.gguf";
  std::string dir = argc > 2 ? argv[2] : std::string(LUMEN_SOURCE_DIR) + "/../shared/testdata/grammars";

  auto tokenizer = tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(model));
  const auto& vocab = tokenizer.vocab();
  std::vector<std::string> bytes(vocab.size());
  std::vector<bool> unusable(vocab.size());
  for (size_t id = 0; id < vocab.size(); ++id) {
    bytes[id] = tokenizer.token_bytes(static_cast<int32_t>(id));
    unusable[id] = tokenizer.is_special(static_cast<int32_t>(id));
  }
  std::vector<int32_t> eog;
  if (vocab.special.eos) eog.push_back(*vocab.special.eos);
  auto t0 = Clock::now();
  auto vocabulary = std::make_shared<const grammar::TokenVocabulary>(std::move(bytes), std::move(unusable), eog);
  double vocab_us = us_since(t0);

  struct Case {
    std::string name, text;
  };
  std::vector<Case> cases = {
      {"json.gbnf", read_file(dir + "/json.gbnf")},
      {"json_arr.gbnf", read_file(dir + "/json_arr.gbnf")},
      {"schema_person", R"(root ::= "{" ws "\"name\"" ws ":" ws string "," ws "\"age\"" ws ":" ws int "," ws "\"email\"" ws ":" ws string "," ws "\"tags\"" ws ":" ws "[" ws (string ("," ws string)*)? "]" ws "}" ws
string ::= "\"" ([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}))* "\"" ws
int ::= "-"? ([0-9] | [1-9] [0-9]{0,15}) ws
ws ::= | " " | "\n" [ \t]{0,20}
)"},
      {"arithmetic.gbnf", read_file(dir + "/arithmetic.gbnf")},
      {"c.gbnf", read_file(dir + "/c.gbnf")},
      {"list.gbnf", read_file(dir + "/list.gbnf")},
  };
  std::printf("{\n  \"vocabulary\": {\"model\": \"%s\", \"tokens\": %zu, \"build_us\": %.0f},\n  \"grammars\": [\n",
              model.c_str(), vocabulary->size(), vocab_us);
  for (size_t c = 0; c < cases.size(); ++c) {
    auto t = Clock::now();
    auto compiled = grammar::compile_grammar(grammar::parse_gbnf(cases[c].text), vocabulary);
    double compile_us = us_since(t);
    t = Clock::now();
    std::vector<double> cold = walk(compiled, vocabulary->size(), 20, 64);
    double cold_total_us = us_since(t);
    std::vector<double> warm = walk(compiled, vocabulary->size(), 20, 64);
    std::printf(
        "    {\"grammar\": \"%s\", \"compile_us\": %.0f, \"masks\": %zu, \"cold_total_ms\": %.1f, \"cold_max_us\": %.0f, "
        "\"warm_p50_us\": %.1f, \"warm_p99_us\": %.1f, \"warm_mean_us\": %.1f}%s\n",
        cases[c].name.c_str(), compile_us, warm.size(), cold_total_us / 1000, percentile(cold, 1.0),
        percentile(warm, 0.5), percentile(warm, 0.99),
        warm.empty() ? 0.0 : [&] { double s = 0; for (double x : warm) s += x; return s / static_cast<double>(warm.size()); }(),
        c + 1 < cases.size() ? "," : "");
  }
  std::printf("  ]\n}\n");
}
