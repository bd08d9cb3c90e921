// Importance-based KV eviction through the engine, on the synthetic model (two layers): a budget
// the sequence never reaches changes no greedy token; a small one holds the sequence to its
// blocks (H2O: the budget's, SnapKV: the budget's and the generated tokens'); the prefix cache
// hands a later request only blocks with its true prefix (its greedy tokens equal a fresh
// engine's); a preempted, compressed sequence is recomputed from every token; and specs the
// engine cannot run are refused when it is made or the request is added.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <filesystem>
#include <string>

#include "backend/cpu/cpu_backend.h"
#include "backend/op_observer.h"
#include "lumen/kv_eviction.h"
#include "synth_engine.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

class EngineKvImportanceTest : public SynthEngineTest {
 protected:
  static void SetUpTestSuite() { set_up_model(2); }

  static SamplingParams with(const char* spec, int64_t max_tokens) {
    SamplingParams p = greedy(max_tokens);
    p.kv_eviction = parse_kv_importance(spec);
    return p;
  }

  // Greedy tokens of one request alone, and the most blocks it held once its prompt was in.
  static std::vector<int32_t> run_alone(const EngineConfig& c, const std::vector<int32_t>& prompt,
                                        const SamplingParams& params, int64_t* most_decoding_blocks = nullptr) {
    Engine engine(handle(), c);
    RequestHandle h = engine.add_request(prompt, params);
    int64_t most = 0;
    for (int step = 0; engine.has_unfinished(); ++step) {
      engine.step();
      // From the second step on the prompt (one chunk) is in and the sequence decodes.
      if (step > 0) most = std::max(most, engine.stats().kv_blocks_used);
    }
    if (most_decoding_blocks) *most_decoding_blocks = most;
    return tokens(h);
  }
};

TEST_F(EngineKvImportanceTest, ABudgetNeverReachedChangesNoToken) {
  const std::vector<int32_t> p = prompt(37, 1);
  const EngineConfig c = config(64);
  const std::vector<int32_t> full = run_alone(c, p, greedy(40));
  ASSERT_EQ(full.size(), 40u);
  EXPECT_EQ(run_alone(c, p, with("snapkv:budget=37,window=8", 40)), full);  // the prompt fits
  EXPECT_EQ(run_alone(c, p, with("h2o:budget=80", 40)), full);              // 77 positions in all
  EngineConfig engine_wide = c;
  engine_wide.kv_importance = parse_kv_importance("h2o:budget=80,recent=8");
  EXPECT_EQ(run_alone(engine_wide, p, greedy(40)), full);
}

TEST_F(EngineKvImportanceTest, ASequenceHoldsNoMoreThanItsBudgetsBlocks) {
  const std::vector<int32_t> p = prompt(60, 2);
  const EngineConfig c = config(64);
  int64_t most = 0;
  // H2O: 16 positions, 4 blocks of 4, however long it generates.
  const std::vector<int32_t> h2o = run_alone(c, p, with("h2o:budget=16,recent=4", 50), &most);
  EXPECT_EQ(h2o.size(), 50u);
  EXPECT_LE(most, 4);
  // SnapKV: the prompt down to 20 positions (5 blocks), then the generated tokens' blocks.
  const std::vector<int32_t> snap = run_alone(c, p, with("snapkv:budget=20,window=4,kernel=3", 50), &most);
  EXPECT_EQ(snap.size(), 50u);
  EXPECT_LE(most, 5 + (50 + 3) / 4);
  // The full cache holds the prompt and every generated token.
  run_alone(c, p, greedy(50), &most);
  EXPECT_GE(most, (60 + 49) / 4);
}

// The scores come from the attention's own pass (attention_scored) on a backend that declares
// it, from attention followed by attention_scores on one that does not (the CPU with
// set_composed_ops): the same tokens, several requests decoding side by side (scored and
// unscored sequences in one batch), and each run really took its path (the ops counted).
class OpCounts final : public backend::OpObserver {
 public:
  void before_op(const backend::OpCall& call) override { ++counts[static_cast<size_t>(call.kind)]; }
  int64_t of(backend::OpKind kind) const { return counts[static_cast<size_t>(kind)]; }
  std::array<int64_t, backend::kOpKindCount> counts{};
};

TEST_F(EngineKvImportanceTest, ScoresFromTheAttentionsPassGiveTheSeparatePassesTokens) {
  const EngineConfig c = config(96);
  // The CPU backend's switch (this binary runs on the CPU only).
  auto& cpu = dynamic_cast<backend::CpuBackend&>(*backend_);
  auto run = [&](bool separate, OpCounts& ops) {
    cpu.set_composed_ops(separate);
    backend_->add_observer(&ops);
    Engine engine(handle(), c);
    std::vector<RequestHandle> handles;
    handles.push_back(engine.add_request(prompt(60, 11), with("h2o:budget=16,recent=4", 30)));
    handles.push_back(engine.add_request(prompt(45, 12), with("snapkv:budget=20,window=4,kernel=3", 30)));
    handles.push_back(engine.add_request(prompt(30, 13), greedy(30)));
    drain(engine);
    backend_->remove_observer(&ops);
    cpu.set_composed_ops(false);
    std::vector<std::vector<int32_t>> out;
    for (RequestHandle& h : handles) out.push_back(tokens(h));
    return out;
  };
  OpCounts fused_ops, separate_ops;
  const std::vector<std::vector<int32_t>> fused = run(false, fused_ops);
  const std::vector<std::vector<int32_t>> separate = run(true, separate_ops);
  EXPECT_EQ(fused, separate);
  for (const std::vector<int32_t>& t : fused) EXPECT_EQ(t.size(), 30u);
  EXPECT_GT(fused_ops.of(backend::OpKind::AttentionScored), 0);
  EXPECT_EQ(fused_ops.of(backend::OpKind::AttentionScores), 0);
  EXPECT_EQ(separate_ops.of(backend::OpKind::AttentionScored), 0);
  // One attention_scores per scored sequence and layer against one attention_scored per layer.
  EXPECT_GE(separate_ops.of(backend::OpKind::AttentionScores), fused_ops.of(backend::OpKind::AttentionScored));
}

TEST_F(EngineKvImportanceTest, ThePrefixCacheNeverHandsOutACompressedSequencesBlocks) {
  const std::vector<int32_t> p = prompt(48, 3);
  EngineConfig fresh = config(64);
  fresh.enable_prefix_caching = false;
  const std::vector<int32_t> reference = run_alone(fresh, p, greedy(12));

  Engine engine(handle(), config(64));
  // A full request first: its prompt's blocks go into the prefix cache.
  RequestHandle first = engine.add_request(p, greedy(12));
  drain(engine);
  EXPECT_EQ(tokens(first), reference);
  // A compressed one shares them, evicts, and writes its kept slots into blocks of its own.
  RequestHandle compressed = engine.add_request(p, with("snapkv:budget=16,window=4", 12));
  while (engine.stats().kv_evictions == 0 && engine.has_unfinished()) engine.step();
  ASSERT_EQ(engine.stats().kv_evictions, 1u);
  // Another full request, while the compressed one runs, then one after it finished: each
  // finds the true prefix (cache hits) and generates what a fresh engine does.
  const uint64_t hits_before = engine.stats().prefix_hit_blocks;
  RequestHandle during = engine.add_request(p, greedy(12));
  drain(engine);
  EXPECT_EQ(tokens(during), reference);
  EXPECT_EQ(tokens(compressed).size(), 12u);
  RequestHandle after = engine.add_request(p, greedy(12));
  drain(engine);
  EXPECT_EQ(tokens(after), reference);
  EXPECT_GE(engine.stats().prefix_hit_blocks - hits_before, 2u * (48 / 4 - 1));
}

TEST_F(EngineKvImportanceTest, APreemptedCompressedSequenceIsRecomputedFromEveryToken) {
  // Room for one long sequence at a time: the second, of higher priority, preempts (recomputes)
  // the first, which then starts over from its whole prompt and generated tokens, and evicts
  // again.
  const std::vector<int32_t> a = prompt(40, 4), b = prompt(40, 5);
  EngineConfig c = config(18);
  c.policy = SchedulingPolicy::Priority;
  Engine engine(handle(), c);
  RequestHandle ha = engine.add_request(a, with("h2o:budget=16,recent=4", 30));
  for (int i = 0; i < 4; ++i) engine.step();  // A's prompt is in and evicted
  ASSERT_GE(engine.stats().kv_evictions, 1u);
  RequestHandle hb = engine.add_request(b, greedy(30), 1);
  drain(engine);
  EXPECT_EQ(tokens(ha).size(), 30u);
  EXPECT_EQ(tokens(hb).size(), 30u);
  EXPECT_GE(engine.stats().preemptions, 1u);
  EXPECT_GE(engine.stats().kv_evictions, 2u);
  EXPECT_EQ(engine.stats().kv_blocks_used, 0);
}

TEST_F(EngineKvImportanceTest, SpecsTheEngineCannotRunAreRefused) {
  EngineConfig tiny = config(64);
  tiny.kv_importance = parse_kv_importance("h2o:budget=4,recent=1");  // one block of 4
  EXPECT_THROW(Engine(handle(), tiny), Error);
  EngineConfig shifting = config(64);
  shifting.context_overflow = ContextOverflow::Shift;
  shifting.max_model_len = 64;
  Engine engine(handle(), shifting);
  EXPECT_THROW(engine.add_request(prompt(10, 6), with("snapkv:budget=16,window=4", 4)), Error);
  Engine plain(handle(), config(64));
  SamplingParams beam = with("h2o:budget=16,recent=4", 4);
  beam.use_beam_search = true;
  beam.n = 2;
  EXPECT_THROW(plain.add_request(prompt(10, 6), beam), Error);
  EXPECT_FALSE(plain.has_unfinished());
}

// A model with attention sinks (gpt-oss) has no scores to evict by: refused when the engine is
// made and when a request asks, before any step (it used to fail inside the first step).
TEST_F(EngineKvImportanceTest, AModelWithAttentionSinksIsRefusedBeforeAnyStep) {
  const std::string path = temp_model_path("gpt_oss");
  model::SynthOptions options;
  options.preset = "gpt-oss-mini";
  options.type = tensor::DType::Q8_0;
  options.vocab_path = testdata_dir() + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.block_count = 2;
  options.threads = 2;
  model::write_synthetic_model(options, path);
  backend::CpuBackend cpu(2);
  engine::LoadedModel loaded = engine::LoadedModel::load(path, cpu);
  std::filesystem::remove(path);
  const Model gpt_oss = engine::borrow_model(loaded, cpu);
  EngineConfig c;
  c.block_size = 4;
  c.kv_cache_bytes = 64 * static_cast<int64_t>(model::KvCache::bytes_per_block(loaded.hparams, 4));
  c.free_out_of_window_kv = false;  // its sliding-window layers keep every position, as eviction needs
  const auto expect_sinks_refusal = [](auto&& call) {
    try {
      call();
      ADD_FAILURE() << "accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("attention sinks"), std::string::npos) << e.what();
    }
  };
  EngineConfig h2o = c;
  h2o.kv_importance = parse_kv_importance("h2o:budget=16,recent=4");
  expect_sinks_refusal([&] { Engine engine(gpt_oss, h2o); });
  Engine plain(gpt_oss, c);
  expect_sinks_refusal([&] { plain.add_request(prompt(10, 6), with("snapkv:budget=16,window=4", 4)); });
  EXPECT_FALSE(plain.has_unfinished());
  // Without eviction it runs.
  RequestHandle h = plain.add_request(prompt(10, 6), greedy(3));
  drain(plain);
  EXPECT_EQ(tokens(h).size(), 3u);
}

}  // namespace
}  // namespace lumen::testing
