#include "cli/run_completions.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>

namespace lumen::cli {

namespace {

// A token's bytes on one line: control characters escaped (a newline token would break the table).
std::string printable(const std::string& bytes) {
  std::string out;
  for (unsigned char c : bytes) {
    if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (c < 0x20 || c == 0x7f) out += fmt::format("\\x{:02x}", c);
    else out += static_cast<char>(c);
  }
  return out;
}

void print_logprob_line(const Model& model, int32_t token, float logprob,
                        const std::vector<TokenAlternative>& top) {
  std::string line = fmt::format("  {:>7} {:<16} {:>9}", token, fmt::format("'{}'", printable(model.token_bytes(token))),
                                 std::isnan(logprob) ? std::string("-") : fmt::format("{:.4f}", logprob));
  for (const TokenAlternative& alt : top) {
    line += fmt::format("  {}:'{}' {:.3f}", alt.token, printable(model.token_bytes(alt.token)), alt.logprob);
  }
  fmt::print(stderr, "{}\n", line);
}

}  // namespace

void run_completions(Engine& engine, const Model& model, const std::vector<int32_t>& prompt,
                     const SamplingParams& params, const InterruptHandler& interrupt) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<RequestHandle> handles = engine.add_request_n(prompt, params);
  bool aborted = false;
  while (engine.has_unfinished()) {
    if (interrupt.interrupted() && !aborted) {
      engine.abort(handles.front().id());
      aborted = true;
    }
    engine.step();
  }
  std::vector<GenerationResult> results;
  for (RequestHandle& handle : handles) results.push_back(handle.collect());
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (params.prompt_logprobs) {
    fmt::print(stderr, "prompt log-probabilities:\n");
    for (const PromptLogprob& p : results.front().prompt_logprobs) print_logprob_line(model, p.token, p.logprob, p.top);
  }
  int64_t generated = 0;
  for (const GenerationResult& r : results) {
    if (results.size() > 1) fmt::print("--- completion {} ({}) ---\n", r.index, finish_reason_name(r.finish));
    fmt::print("{}\n", r.text);
    std::fflush(stdout);
    generated += static_cast<int64_t>(r.tokens.size());
    if (params.logprobs) {
      double sum = 0.0;
      fmt::print(stderr, "completion {} log-probabilities:\n", r.index);
      for (size_t i = 0; i < r.tokens.size(); ++i) {
        print_logprob_line(model, r.tokens[i], r.logprobs[i], r.top_logprobs[i]);
        sum += r.logprobs[i];
      }
      fmt::print(stderr, "  sum {:.4f}, mean {:.4f}\n", sum, r.tokens.empty() ? 0.0 : sum / static_cast<double>(r.tokens.size()));
    }
  }
  const EngineStats stats = engine.stats();
  fmt::print(stderr, "{} completions, {} tokens delivered, {} computed in {:.3f} s\n", results.size(), generated,
             stats.computed_tokens, seconds);
}

}  // namespace lumen::cli
