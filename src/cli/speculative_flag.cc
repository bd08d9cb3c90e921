#include "cli/speculative_flag.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace lumen::cli {

namespace {

double ratio(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : static_cast<double>(a) / static_cast<double>(b); }

}  // namespace

std::string speculation_summary(const EngineStats& s) {
  std::string line =
      fmt::format("speculative decoding: {} drafts, {} of {} draft tokens accepted ({:.1f}%), mean accepted length {:.2f}",
                  s.spec_drafts, s.spec_accepted_tokens, s.spec_draft_tokens,
                  100.0 * ratio(s.spec_accepted_tokens, s.spec_draft_tokens),
                  1.0 + ratio(s.spec_accepted_tokens, s.spec_drafts));
  if (s.spec_branch_tokens > 0) line += fmt::format(", {} of them off a tree's first branch", s.spec_branch_tokens);
  if (s.spec_paused_steps > 0) {
    // Said plainly: a user who asked for speculation sees why it did little.
    line += fmt::format(
        "; switched itself off for {} decode step{} where its drafts did not pay (too few accepted for "
        "what a draft costs on this machine)",
        s.spec_paused_steps, s.spec_paused_steps == 1 ? "" : "s");
  }
  return line;
}

nlohmann::ordered_json speculation_json(const EngineStats& s) {
  return {{"num_drafts", s.spec_drafts},
          {"num_draft_tokens", s.spec_draft_tokens},
          {"num_accepted_tokens", s.spec_accepted_tokens},
          {"num_branch_tokens", s.spec_branch_tokens},
          {"num_paused_steps", s.spec_paused_steps},
          {"acceptance_rate", ratio(s.spec_accepted_tokens, s.spec_draft_tokens)},
          {"mean_accepted_length", 1.0 + ratio(s.spec_accepted_tokens, s.spec_drafts)}};
}

void SpeculativeFlag::add_to(CLI::App* cmd) {
  cmd->add_option(kSpeculativeConfigFlag, json,
                  "Speculative decoding, vLLM's JSON: '{\"method\": \"ngram\", \"num_speculative_tokens\": 5, "
                  "\"prompt_lookup_max\": 4, \"prompt_lookup_min\": 2}', or '{\"method\": \"lookahead\", "
                  "\"window_size\": 4, \"ngram_size\": 4, \"guess_set_size\": 4}' (add \"num_candidates\": 3, any method, to verify "
                  "several candidates as a token tree)");
  cmd->add_flag("--no-jump-forward", no_jump_forward,
                "Structured output: decode the text a grammar forces token by token instead of verifying it "
                "in one pass (the output is the same)");
}

}  // namespace lumen::cli
