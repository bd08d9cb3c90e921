// Importance-based KV eviction on a model whose layers all have a sliding window (the synthetic
// gemma3-mini: 2 local layers of a 16-position window, sharp attention). A local layer must
// attend to exactly the kept keys whose true positions are within its window of the query
// (issue 53). An eviction that keeps at least a window's worth of positions loses nothing such
// a layer can see, so every greedy token equals the full cache's; before the fix the scored
// slots far back stayed inside the layers' window counted in slots, and the tokens differed.
#include <gtest/gtest.h>

#include "lumen/kv_eviction.h"
#include "synth_engine.h"

namespace lumen::testing {
namespace {

class EngineKvEvictionSlidingTest : public SynthEngineTest {
 protected:
  static void SetUpTestSuite() {
    if (!have_testdata()) return;
    path_ = new std::string(temp_model_path("gemma3_mini"));
    model::SynthOptions options;
    options.preset = "gemma3-mini";
    options.type = tensor::DType::Q8_0;
    options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
    options.seed = 9;
    options.block_count = 2;  // both local (Gemma 3's global layer is every sixth)
    options.threads = 2;
    model::write_synthetic_model(options, *path_);
    backend_ = new backend::CpuBackend(2);
    model_ = new engine::LoadedModel(engine::LoadedModel::load(*path_, *backend_));
  }

  static std::vector<int32_t> run(const std::vector<int32_t>& prompt, const SamplingParams& params,
                                  uint64_t* evictions = nullptr) {
    EngineConfig c = config(64);
    c.free_out_of_window_kv = false;  // eviction needs one group of every layer
    Engine engine(handle(), c);
    RequestHandle h = engine.add_request(prompt, params);
    drain(engine);
    if (evictions) *evictions = engine.stats().kv_evictions;
    return tokens(h);
  }

  static SamplingParams with(const char* spec, int64_t max_tokens) {
    SamplingParams p = greedy(max_tokens);
    p.kv_eviction = parse_kv_importance(spec);
    return p;
  }
};

TEST_F(EngineKvEvictionSlidingTest, LocalLayersKeepingAWindowSeeWhatTheFullCacheShows) {
  ASSERT_EQ(model_->transformer->layer_windows()[0], 16);
  ASSERT_EQ(model_->transformer->layer_windows()[1], 16);
  const std::vector<int32_t> p = prompt(40, 11);
  const std::vector<int32_t> full = run(p, greedy(30));
  ASSERT_EQ(full.size(), 30u);
  uint64_t evictions = 0;
  // SnapKV: the 40-token prompt down to 16 positions once (its observation window of 4 and 12
  // scored ones for a full-attention layer); a local query then sees its last 15 and itself.
  EXPECT_EQ(run(p, with("snapkv:budget=16,window=4", 30), &evictions), full);
  EXPECT_EQ(evictions, 1u);
  // H2O: down to 16 of 20 positions every block of output, 12 of them scored elsewhere.
  EXPECT_EQ(run(p, with("h2o:budget=20,recent=4", 30), &evictions), full);
  EXPECT_GE(evictions, 7u);  // the prompt down to 16, then one every 4 tokens
}

TEST_F(EngineKvEvictionSlidingTest, LocalLayersKeepingLessThanAWindowStillRun) {
  // 8 positions: each local query sees its last 7 and itself, the rest of its window is gone.
  uint64_t evictions = 0;
  EXPECT_EQ(run(prompt(40, 12), with("h2o:budget=8,recent=2", 20), &evictions).size(), 20u);
  EXPECT_GE(evictions, 5u);
}

}  // namespace
}  // namespace lumen::testing
