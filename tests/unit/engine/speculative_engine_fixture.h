#pragma once
// What the speculative engine tests share: an oracle proposer that knows the plain output and
// spoils some of its proposals (so drafts are both accepted and rejected), and a fixture that
// runs a workload through an Engine with or without it and compares the outputs bit for bit.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "engine/engine_test_access.h"
#include "spec/proposer.h"
#include "synth_engine.h"

namespace lumen::testing {
// Under the sanitizers (10x slower) the tests run a subset of their sweeps: every path, fewer sizes.
constexpr bool kUnderSanitizers = LUMEN_UNDER_SANITIZERS != 0;

// Proposes the continuation of whichever known sequence (prompt + plain output) the sequence is
// a prefix of; every `spoil_every`-th proposal has one wrong token, at a varying place.
class OracleProposer final : public spec::Proposer {
 public:
  OracleProposer(std::vector<std::vector<int32_t>> known, int spoil_every)
      : known_(std::move(known)), spoil_every_(spoil_every) {}

  void propose(std::span<const spec::DraftRequest> requests) override {
    for (const spec::DraftRequest& r : requests) {
      r.draft->clear();
      for (const std::vector<int32_t>& k : known_) {
        if (k.size() <= r.tokens.size() || !std::equal(r.tokens.begin(), r.tokens.end(), k.begin())) continue;
        const size_t end = std::min(k.size(), r.tokens.size() + static_cast<size_t>(r.max_tokens));
        r.draft->assign(k.begin() + static_cast<std::ptrdiff_t>(r.tokens.size()), k.begin() + static_cast<std::ptrdiff_t>(end));
        ++proposals_;
        if (spoil_every_ > 0 && proposals_ % spoil_every_ == 0) {
          int32_t& t = (*r.draft)[static_cast<size_t>(proposals_ / spoil_every_) % r.draft->size()];
          t = t == 300 ? 301 : 300;
        }
        break;
      }
    }
  }

 private:
  std::vector<std::vector<int32_t>> known_;
  int spoil_every_;
  int proposals_ = 0;
};

class EngineSpeculative : public SynthEngineTest {
 protected:
  static EngineConfig speculative(int64_t kv_blocks, int32_t k = 4) {
    EngineConfig c = config(kv_blocks);
    c.speculative.method = SpeculativeMethod::Ngram;
    c.speculative.num_speculative_tokens = k;
    c.speculative.min_acceptance_rate = 0.0;  // the oracle's spoiled drafts must not pause it
    return c;
  }

  struct Run {
    std::vector<GenerationResult> results;
    EngineStats stats;
  };

  // Submits each prompt with its params, steps to the end (aborting `abort_id`'s request after
  // three steps, if given) and collects every completion. With `known`, drafts come from the
  // oracle over those sequences.
  static Run run(EngineConfig c, const std::vector<std::vector<int32_t>>& prompts, const std::vector<SamplingParams>& params,
                 const std::vector<std::vector<int32_t>>* known = nullptr, int spoil_every = 3, int abort_index = -1) {
    Engine engine(handle(), c);
    engine::EngineTestAccess::set_poison_reduced_rows(engine, poison_reduced_rows);
    if (known != nullptr) {
      engine::EngineTestAccess::set_proposer(engine, std::make_unique<OracleProposer>(*known, spoil_every));
    }
    std::vector<std::vector<RequestHandle>> handles;
    for (size_t i = 0; i < prompts.size(); ++i) handles.push_back(engine.add_request_n(prompts[i], params[i]));
    for (int steps = 0; engine.has_unfinished(); ++steps) {
      if (steps == 3 && abort_index >= 0) engine.abort(handles[static_cast<size_t>(abort_index)][0].id());
      engine.step();
      // Only the blocks of computed positions are held after a step: rejected drafts' go back.
      const EngineStats s = engine.stats();
      EXPECT_LT(s.kv_slots_allocated - s.kv_slots_filled, c.block_size * std::max<int64_t>(s.running, 1));
    }
    Run r;
    for (auto& hs : handles) {
      for (RequestHandle& h : hs) r.results.push_back(h.collect());
    }
    r.stats = engine.stats();
    EXPECT_EQ(r.stats.kv_blocks_used, 0);
    return r;
  }

  // Each request's prompt followed by each of its completions' plain output.
  static std::vector<std::vector<int32_t>> known_sequences(const std::vector<std::vector<int32_t>>& prompts,
                                                           const std::vector<SamplingParams>& params, const Run& plain) {
    std::vector<std::vector<int32_t>> known;
    size_t r = 0;
    for (size_t i = 0; i < prompts.size(); ++i) {
      for (int32_t j = 0; j < params[i].n; ++j, ++r) {
        known.push_back(prompts[i]);
        known.back().insert(known.back().end(), plain.results[r].tokens.begin(), plain.results[r].tokens.end());
      }
    }
    return known;
  }

  static void expect_same_output(const Run& with, const Run& without) {
    ASSERT_EQ(with.results.size(), without.results.size());
    for (size_t i = 0; i < with.results.size(); ++i) {
      SCOPED_TRACE("completion " + std::to_string(i));
      EXPECT_EQ(with.results[i].tokens, without.results[i].tokens);
      EXPECT_EQ(with.results[i].text, without.results[i].text);
      EXPECT_EQ(with.results[i].finish, without.results[i].finish);
      // Bit for bit: the rows of a chunk with a draft are the rows of plain decode steps.
      EXPECT_EQ(with.results[i].logprobs.size(), without.results[i].logprobs.size());
      for (size_t t = 0; t < std::min(with.results[i].logprobs.size(), without.results[i].logprobs.size()); ++t) {
        const float a = with.results[i].logprobs[t], b = without.results[i].logprobs[t];
        EXPECT_TRUE(a == b || (std::isnan(a) && std::isnan(b))) << "token " << t << ": " << a << " vs " << b;
      }
    }
  }

  // run()'s engines poison the rows that came back as their argmax alone (reduced_rows.h).
  static inline bool poison_reduced_rows = false;

  static void expect_drafts_accepted_and_rejected(const EngineStats& s) {
    EXPECT_GT(s.spec_drafts, 0u);
    EXPECT_GT(s.spec_accepted_tokens, 0u);
    EXPECT_LT(s.spec_accepted_tokens, s.spec_draft_tokens);
  }

  static std::vector<std::vector<int32_t>> prompts(int n) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) out.push_back(prompt(5 + 7 * i, 40 + i));
    return out;
  }
};

}  // namespace lumen::testing
