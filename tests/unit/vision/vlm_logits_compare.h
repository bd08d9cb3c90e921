#pragma once
// What the vision-language logits tests share (vlm_logits_test.cc: LLaVA,
// vlm_idefics3_logits_test.cc: Idefics3): a prompt with its images run through the engine to
// every position's top log-probabilities, and their comparison with a transformers golden's.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "lumen/engine.h"

namespace lumen::testing {

inline std::vector<uint8_t> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The tolerance the synthetic mixture-of-experts logits goldens hold Lumen to: the smallest of
// their reference spreads (largest top-logit difference between llama.cpp's own two paths).
inline double moe_tolerance() {
  double floor = 1e9;
  for (const char* name : {"moe_qwen2moe", "moe_qwen3moe", "moe_olmoe", "moe_mixtral", "moe_deepseek2"}) {
    std::ifstream in(std::string(LUMEN_GOLDEN_DIR) + "/logits/" + name + ".json");
    floor = std::min(floor, nlohmann::json::parse(in)["reference_spread"]["max_top_logit_diff"].get<double>());
  }
  return floor;
}

// Each prompt position's distribution (HF's row i predicts token i + 1; the last row, the
// first generated token) as Lumen computes it for `ids` with the images `placed`.
inline std::vector<std::vector<TokenAlternative>> prompt_rows(Engine& engine, const std::vector<int32_t>& ids,
                                                              const std::vector<PromptImage>& placed) {
  SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = 1;
  params.logprobs = 8;
  params.prompt_logprobs = 8;
  RequestHandle h = engine.add_request_n(ids, params, 0, 0, 0, placed).front();
  while (engine.has_unfinished()) engine.step();
  GenerationResult r = h.collect();
  EXPECT_EQ(r.finish, FinishReason::Length) << r.error;
  std::vector<std::vector<TokenAlternative>> rows;
  for (size_t i = 1; i < r.prompt_logprobs.size(); ++i) rows.push_back(r.prompt_logprobs[i].top);
  if (!r.top_logprobs.empty()) rows.push_back(r.top_logprobs.front());
  return rows;
}

// How Lumen's rows compare with the golden's top 8: the largest difference between the
// log-probabilities of a token both rank there, the fewest such tokens in a row, and the rows
// whose top token differs although the golden's top two are further apart than `tol`.
struct Comparison {
  double worst = 0.0;
  size_t fewest_shared = 8;
  int top1_misses = 0;
};
inline Comparison compare(const nlohmann::json& c, const std::vector<std::vector<TokenAlternative>>& rows, double tol) {
  const auto& tokens = c["top_tokens"];
  const auto& logprobs = c["top_logprobs"];
  EXPECT_EQ(rows.size(), tokens.size());
  Comparison out;
  for (size_t i = 0; i < std::min(rows.size(), tokens.size()); ++i) {
    size_t shared = 0;
    for (const TokenAlternative& alt : rows[i]) {
      for (size_t k = 0; k < tokens[i].size(); ++k) {
        if (tokens[i][k].get<int32_t>() != alt.token) continue;
        out.worst = std::max(out.worst, std::abs(static_cast<double>(alt.logprob) - logprobs[i][k].get<double>()));
        ++shared;
      }
    }
    out.fewest_shared = std::min(out.fewest_shared, shared);
    const double gap = logprobs[i][0].get<double>() - logprobs[i][1].get<double>();
    if (!rows[i].empty() && rows[i].front().token != tokens[i][0].get<int32_t>() && gap > tol) ++out.top1_misses;
  }
  return out;
}

}  // namespace lumen::testing
