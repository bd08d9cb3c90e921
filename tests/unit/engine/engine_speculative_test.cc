// Speculative decoding through the engine on the synthetic model: whatever the drafts, the
// output is the output without them (greedy, and seeded sampling with every processor, n > 1
// and best_of, log-probabilities included), ends where it ends without them (stop tokens, stop
// strings, max_tokens inside an accepted run), survives preemption (recompute and swap) and
// abort, gives back the blocks of rejected positions, and stays off above the batch limit.
// The drafts come from an oracle that knows the plain output and spoils some of its proposals,
// so both acceptance and rejection happen often.
#include <algorithm>
#include <cmath>

#include "oracle_tree_proposer.h"
#include "spec/lookahead_proposer.h"
#include "spec/ngram_proposer.h"
#include "speculative_engine_fixture.h"

namespace lumen::testing {
namespace {

// The oracle's drafts with lookahead's window rows beside them (the window's own drafts
// dropped): drafts accepted and rejected while extra rows ride in the same chunks.
class OracleWithWindow final : public spec::Proposer {
 public:
  OracleWithWindow(std::vector<std::vector<int32_t>> known, int spoil_every)
      : oracle_(std::move(known), spoil_every), window_({.window = 3, .ngram = 3, .guesses = 2}) {}

  void propose(std::span<const spec::DraftRequest> requests) override {
    window_.propose(requests);
    oracle_.propose(requests);
  }
  void observe(uint64_t id, std::span<const int32_t> outputs) override { window_.observe(id, outputs); }
  void forget_ended(const std::function<bool(uint64_t)>& live) override { window_.forget_ended(live); }

 private:
  OracleProposer oracle_;
  spec::LookaheadProposer window_;
};

TEST_F(EngineSpeculative, GreedyOutputIsTheOutputWithoutDrafts) {
  const auto ps = prompts(5);
  std::vector<SamplingParams> params;
  for (int i = 0; i < 5; ++i) params.push_back(greedy(30 + 3 * i));
  params[2].logprobs = 3;
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  for (int32_t k : kUnderSanitizers ? std::vector<int32_t>{4} : std::vector<int32_t>{1, 4, 7}) {
    SCOPED_TRACE("k = " + std::to_string(k));
    const Run with = run(speculative(512, k), ps, params, &known);
    expect_same_output(with, plain);
    expect_drafts_accepted_and_rejected(with.stats);
    // Fewer steps: accepted drafts are tokens no step had to decode.
    EXPECT_LT(with.stats.steps, plain.stats.steps);
  }
  // The built-in n-gram proposer, whatever it finds in the synthetic model's output.
  expect_same_output(run(speculative(512), ps, params), plain);
}

// A greedy draft's rows come back as their argmax alone and are verified from it: with those
// rows' logits poisoned (NaN, as a device that never copied them back leaves them) the output is
// still the plain one, and draft rows were among the reduced rows.
TEST_F(EngineSpeculative, GreedyDraftsAreVerifiedFromTheirRowsArgmaxAlone) {
  const auto ps = prompts(4);
  std::vector<SamplingParams> params;
  for (int i = 0; i < 4; ++i) params.push_back(greedy(24 + 2 * i));
  params[3].logprobs = 2;  // needs its rows whole
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  poison_reduced_rows = true;
  const Run with = run(speculative(512, 4), ps, params, &known);
  poison_reduced_rows = false;
  expect_same_output(with, plain);
  expect_drafts_accepted_and_rejected(with.stats);
  EXPECT_LT(with.stats.steps, plain.stats.steps);
}

// A seeded sampled draft confined by top-k, top-p or min-p: its rows come back as their leading
// candidates and are verified from them (and from the whole row, brought back, when a nucleus
// reaches past them), drawing as the plain decoder draws: with the reduced rows poisoned the
// output is still the plain one.
TEST_F(EngineSpeculative, SampledDraftsAreVerifiedFromTheirLeadingCandidates) {
  const auto ps = prompts(5);
  std::vector<SamplingParams> params;
  for (int i = 0; i < 5; ++i) {
    SamplingParams p;
    p.temperature = 0.7f;
    p.max_tokens = 20 + 2 * i;
    p.seed = 40 + static_cast<uint64_t>(i);
    params.push_back(p);
  }
  params[0].top_k = 8;
  params[1].top_p = 0.5f;
  params[2].min_p = 0.3f;
  params[3].top_k = 30;
  params[3].top_p = 0.8f;
  params[4].temperature = 1.0f;  // a plain draw: its rows settle by each draw's uniform
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  poison_reduced_rows = true;
  const Run with = run(speculative(512, 4), ps, params, &known);
  poison_reduced_rows = false;
  expect_same_output(with, plain);
  expect_drafts_accepted_and_rejected(with.stats);
  EXPECT_LT(with.stats.steps, plain.stats.steps);
}

TEST_F(EngineSpeculative, LookaheadKeepsTheOutputWithoutItGreedyAndSampled) {
  SamplingParams sampled;
  sampled.temperature = 0.8f;
  sampled.top_k = 40;
  sampled.repetition_penalty = 1.1f;
  sampled.max_tokens = 30;
  sampled.logprobs = 2;
  sampled.seed = 5;
  SamplingParams n2 = sampled;
  n2.n = 2;
  const auto ps = prompts(4);
  std::vector<SamplingParams> params = {greedy(40), greedy(33), sampled, n2};
  params[0].logprobs = 3;
  const Run plain = run(config(512), ps, params);
  auto lookahead = [](int64_t kv_blocks) {
    EngineConfig c = config(kv_blocks);
    c.speculative.method = SpeculativeMethod::Lookahead;
    c.speculative.window_size = 3;
    c.speculative.ngram_size = 3;
    c.speculative.min_acceptance_rate = 0.0;  // the window runs every step
    return c;
  };
  const Run with = run(lookahead(512), ps, params);
  expect_same_output(with, plain);
  // The window's 5 rows rode along the decode steps (they count as computed tokens).
  EXPECT_GT(with.stats.computed_tokens, plain.stats.computed_tokens + 5 * 100);
  EXPECT_GT(with.stats.spec_drafts, 0u);
  // Preempted (recompute and swap) with the window's rows in flight; under the sanitizers only
  // swap, the path with more memory to get wrong.
  const std::vector<PreemptionMode> modes = kUnderSanitizers
                                                ? std::vector<PreemptionMode>{PreemptionMode::Swap}
                                                : std::vector<PreemptionMode>{PreemptionMode::Recompute, PreemptionMode::Swap};
  for (PreemptionMode mode : modes) {
    SCOPED_TRACE(mode == PreemptionMode::Swap ? "swap" : "recompute");
    EngineConfig small = lookahead(22);
    small.preemption_mode = mode;
    const Run preempted = run(small, ps, params);
    expect_same_output(preempted, plain);
    EXPECT_GT(preempted.stats.preemptions, 0u);
  }
}

TEST_F(EngineSpeculative, TokenTreesKeepTheOutputAndMoveTheAcceptedBranchIntoPlace) {
  SamplingParams sampled;
  sampled.temperature = 0.8f;
  sampled.top_k = 40;
  sampled.max_tokens = 30;
  sampled.logprobs = 2;
  sampled.seed = 11;
  const auto ps = prompts(4);
  std::vector<SamplingParams> params = {greedy(36), greedy(31), greedy(27), sampled};
  params[0].logprobs = 3;
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  EngineConfig c = speculative(512, 4);
  c.speculative.num_candidates = 3;
  for (PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    for (const int64_t blocks : {512, 22}) {
      // Under the sanitizers: without preemption once, then preempted by swapping.
      if (kUnderSanitizers && (blocks == 22) != (mode == PreemptionMode::Swap)) continue;
      SCOPED_TRACE(std::to_string(blocks) + " blocks, " + (mode == PreemptionMode::Swap ? "swap" : "recompute"));
      EngineConfig t = speculative(blocks, 4);
      t.speculative.num_candidates = 3;
      t.preemption_mode = mode;
      Engine engine(handle(), t);
      engine::EngineTestAccess::set_proposer(engine, std::make_unique<OracleTreeProposer>(known));
      std::vector<RequestHandle> hs;
      for (size_t i = 0; i < ps.size(); ++i) hs.push_back(engine.add_request(ps[i], params[i]));
      while (engine.has_unfinished()) {
        engine.step();
        const EngineStats s = engine.stats();
        EXPECT_LT(s.kv_slots_allocated - s.kv_slots_filled, t.block_size * std::max<int64_t>(s.running, 1));
      }
      Run with;
      for (RequestHandle& h : hs) with.results.push_back(h.collect());
      with.stats = engine.stats();
      // Bit-equal log-probabilities after accepted second branches: their K/V was moved right.
      expect_same_output(with, plain);
      expect_drafts_accepted_and_rejected(with.stats);
      EXPECT_LT(with.stats.steps, plain.stats.steps);
      // The oracle's first branch is spoiled and its second right: the second branch wins tokens.
      EXPECT_GT(with.stats.spec_branch_tokens, 0u);
      EXPECT_LE(with.stats.spec_branch_tokens, with.stats.spec_accepted_tokens);
      if (blocks == 22) {
        EXPECT_GT(with.stats.preemptions, 0u);
      }
    }
  }
  // The built-in proposers' trees: n-gram matches of every length (not under the sanitizers:
  // the oracle's trees above take the same paths), lookahead's pooled n-grams.
  if (!kUnderSanitizers) expect_same_output(run(c, ps, params), plain);
  EngineConfig la = config(512);
  la.speculative.method = SpeculativeMethod::Lookahead;
  la.speculative.window_size = 3;
  la.speculative.ngram_size = 3;
  la.speculative.num_candidates = 4;
  la.speculative.min_acceptance_rate = 0.0;
  expect_same_output(run(la, ps, params), plain);
}

TEST_F(EngineSpeculative, DraftsBesideLookaheadWindowRowsAreVerifiedAsWithout) {
  const auto ps = prompts(4);
  std::vector<SamplingParams> params;
  for (int i = 0; i < 4; ++i) params.push_back(greedy(28 + 3 * i));
  params[1].logprobs = 2;
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  Engine engine(handle(), speculative(512));
  engine::EngineTestAccess::set_proposer(engine, std::make_unique<OracleWithWindow>(known, 3));
  Run with;
  std::vector<RequestHandle> hs;
  for (size_t i = 0; i < ps.size(); ++i) hs.push_back(engine.add_request(ps[i], params[i]));
  while (engine.has_unfinished()) {
    engine.step();
    // The window's positions go back after every step, as rejected drafts' do.
    const EngineStats s = engine.stats();
    EXPECT_LT(s.kv_slots_allocated - s.kv_slots_filled, 4 * std::max<int64_t>(s.running, 1));
  }
  for (RequestHandle& h : hs) with.results.push_back(h.collect());
  with.stats = engine.stats();
  expect_same_output(with, plain);
  expect_drafts_accepted_and_rejected(with.stats);
  EXPECT_EQ(with.stats.kv_blocks_used, 0);
}

TEST_F(EngineSpeculative, SeededSamplingWithEveryProcessorIsTheOutputWithoutDrafts) {
  SamplingParams p;
  p.temperature = 0.8f;
  p.top_k = 40;
  p.top_p = 0.9f;
  p.min_p = 0.01f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.3f;
  p.presence_penalty = 0.2f;
  p.logit_bias = {{300, 2.0f}, {301, -1.0f}};
  p.min_tokens = 4;
  p.max_tokens = 24;
  p.logprobs = 2;
  p.seed = 99;
  SamplingParams n3 = p;
  n3.n = 3;
  SamplingParams best_of = p;
  best_of.n = 2;
  best_of.best_of = 3;
  best_of.seed = 7;
  const auto ps = prompts(3);
  const std::vector<SamplingParams> params = {p, n3, best_of};
  const Run plain = run(config(512), ps, params);
  // best_of's delivered completions are the best 2 of 3: the oracle knows only those, so the
  // third one's drafts are mostly wrong (rejection at work).
  const auto known = known_sequences(ps, params, plain);
  const Run with = run(speculative(512), ps, params, &known);
  expect_same_output(with, plain);
  expect_drafts_accepted_and_rejected(with.stats);
}

TEST_F(EngineSpeculative, StopsInsideAnAcceptedRunEndWhereThePlainOutputEnds) {
  const std::vector<int32_t> p = prompt(9, 77);
  const Run reference = run(config(512), {p}, {greedy(40)});
  const std::vector<int32_t>& out = reference.results[0].tokens;
  const std::string& text = reference.results[0].text;
  ASSERT_EQ(out.size(), 40u);
  std::vector<SamplingParams> cases;
  for (int64_t max_tokens = 1; max_tokens <= 13; max_tokens += kUnderSanitizers ? 4 : 1) {
    cases.push_back(greedy(max_tokens));
  }
  for (size_t at : {3u, 10u, 17u}) {
    SamplingParams stop_id = greedy(40);
    stop_id.stop_token_ids = {out[at]};
    cases.push_back(stop_id);
  }
  ASSERT_GT(text.size(), 12u);
  for (size_t at : {size_t{5}, text.size() / 2, text.size() - 4}) {
    SamplingParams stop_text = greedy(40);
    stop_text.stop = {text.substr(at, 3)};
    cases.push_back(stop_text);
  }
  std::vector<std::vector<int32_t>> known = {p};
  known[0].insert(known[0].end(), out.begin(), out.end());
  for (const SamplingParams& c : cases) {
    const Run plain = run(config(512), {p}, {c});
    // The oracle's drafts are right (no spoiling): the end falls inside accepted runs.
    const Run with = run(speculative(512, 6), {p}, {c}, &known, 0);
    expect_same_output(with, plain);
  }
}

TEST_F(EngineSpeculative, PreemptedSpeculatingSequencesFinishWithTheirPlainOutput) {
  const auto ps = prompts(4);
  const std::vector<SamplingParams> params(4, greedy(24));
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  for (PreemptionMode mode : {PreemptionMode::Recompute, PreemptionMode::Swap}) {
    SCOPED_TRACE(mode == PreemptionMode::Swap ? "swap" : "recompute");
    EngineConfig c = speculative(22);
    c.preemption_mode = mode;
    const Run with = run(c, ps, params, &known);
    expect_same_output(with, plain);
    EXPECT_GT(with.stats.preemptions, 0u);
    EXPECT_GT(with.stats.spec_accepted_tokens, 0u);
  }
}

TEST_F(EngineSpeculative, AbortingASpeculatingRequestLeavesTheOthersAlone) {
  const auto ps = prompts(3);
  const std::vector<SamplingParams> params(3, greedy(30));
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  const Run with = run(speculative(512), ps, params, &known, 3, /*abort_index=*/1);
  EXPECT_EQ(with.results[1].finish, FinishReason::Abort);
  EXPECT_LT(with.results[1].tokens.size(), 30u);
  for (size_t i : {0u, 2u}) EXPECT_EQ(with.results[i].tokens, plain.results[i].tokens);
}

TEST_F(EngineSpeculative, NoDraftsWhileTheBatchIsAboveTheLimit) {
  const auto ps = prompts(4);
  std::vector<SamplingParams> params = {greedy(6), greedy(6), greedy(30), greedy(30)};
  const Run plain = run(config(512), ps, params);
  const auto known = known_sequences(ps, params, plain);
  EngineConfig c = speculative(512);
  c.speculative.disable_by_batch_size = 2;
  Engine engine(handle(), c);
  engine::EngineTestAccess::set_proposer(engine, std::make_unique<OracleProposer>(known, 0));
  std::vector<RequestHandle> hs;
  for (size_t i = 0; i < ps.size(); ++i) hs.push_back(engine.add_request(ps[i], params[i]));
  uint64_t drafts_while_crowded = 0;
  while (engine.has_unfinished()) {
    const EngineStats before = engine.stats();
    engine.step();
    if (before.running > 2) drafts_while_crowded += engine.stats().spec_drafts - before.spec_drafts;
  }
  EXPECT_EQ(drafts_while_crowded, 0u);
  EXPECT_GT(engine.stats().spec_drafts, 0u);  // once two had finished
  for (size_t i = 0; i < hs.size(); ++i) EXPECT_EQ(hs[i].collect().tokens, plain.results[i].tokens);
}

// Drafts that are always wrong: the token after the one the plain output has next.
class WrongProposer final : public spec::Proposer {
 public:
  explicit WrongProposer(std::vector<int32_t> known) : known_(std::move(known)) {}
  void propose(std::span<const spec::DraftRequest> requests) override {
    for (const spec::DraftRequest& r : requests) {
      r.draft->clear();
      if (r.tokens.size() >= known_.size()) continue;
      r.draft->assign(static_cast<size_t>(r.max_tokens), known_[r.tokens.size()] + 1);
    }
  }

 private:
  std::vector<int32_t> known_;
};

// Issue 49: a proposer that is always wrong switches itself off (per sequence; the acceptance
// and measured break-even rules are in spec/acceptance_history.h, tested there) and the stats
// say for how many steps, while min_acceptance_rate 0 keeps it drafting every step it can.
TEST_F(EngineSpeculative, APoorProposerSwitchesItselfOffAndSaysSo) {
  const auto ps = prompts(1);
  const std::vector<SamplingParams> params = {greedy(60)};
  const Run plain = run(config(512), ps, params);
  const std::vector<int32_t> known = known_sequences(ps, params, plain)[0];
  auto speculate = [&](EngineConfig c) {
    Engine engine(handle(), c);
    engine::EngineTestAccess::set_proposer(engine, std::make_unique<WrongProposer>(known));
    RequestHandle h = engine.add_request(ps[0], params[0]);
    drain(engine);
    EXPECT_EQ(h.collect().tokens, plain.results[0].tokens);
    return engine.stats();
  };
  EngineConfig pausing = speculative(512);
  pausing.speculative.min_acceptance_rate = 0.1;
  const EngineStats poor = speculate(pausing);
  EXPECT_GT(poor.spec_paused_steps, 30u);
  EXPECT_LT(poor.spec_drafts, 20u);
  const EngineStats always = speculate(speculative(512));  // min_acceptance_rate 0
  EXPECT_EQ(always.spec_paused_steps, 0u);
  EXPECT_GE(always.spec_drafts, 55u);
}

}  // namespace
}  // namespace lumen::testing
