#pragma once
// What the engine unit tests share: a tiny synthetic model (one layer of smollm2's shapes,
// random weights) written once per test binary, so the engine's scheduling paths (abort,
// n/best_of, beam search, preemption, prefix caching, priority) run in every build, ASan
// included, without the real model. On the CPU backend, or on CUDA in the engine tests' CUDA
// builds (engine_test_backend.h: speculation and structured output run there too).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "engine/loaded_model.h"
#include "engine_test_backend.h"
#include "engine/model_state.h"
#include "lumen_testdata.h"
#include "lumen/engine.h"
#include "model/kv_cache.h"
#include "model/synth.h"

namespace lumen::testing {

class SynthEngineTest : public ::testing::Test {
 protected:
  // One layer: the engine logic is what is tested, not the model. A fixture that needs more
  // (layer-skip speculation) sets up its own with set_up_model.
  static void SetUpTestSuite() { set_up_model(1); }
  static void set_up_model(uint64_t block_count) {
    if (!have_testdata()) return;  // each test skips in SetUp
    path_ = new std::string(temp_model_path("synth"));
    write_model(*path_, block_count, 5);
    backend_ = make_engine_test_backend();
    if (backend_ == nullptr) return;  // no CUDA device: each test skips in SetUp
    model_ = new engine::LoadedModel(engine::LoadedModel::load(*path_, *backend_));
  }
  // A synthetic model of smollm2's shapes with the shared test vocabulary (or `vocab_file`
  // from the shared test data's tokenizer folder).
  static void write_model(const std::string& path, uint64_t block_count, uint64_t seed,
                          const std::string& vocab_file = "ggml-vocab-llama-spm.gguf") {
    model::SynthOptions options;
    options.preset = "smollm2-135m";
    options.type = tensor::DType::Q8_0;
    options.vocab_path = testdata_dir() + "/tokenizer/" + vocab_file;
    options.seed = seed;
    options.block_count = block_count;
    options.threads = 2;
    model::write_synthetic_model(options, path);
  }
  static std::string temp_model_path(const std::string& what) {
    return (std::filesystem::temp_directory_path() /
            ("lumen_engine_" + what + "_" + std::to_string(::getpid()) + ".gguf"))
        .string();
  }
  // The loaded model as the public API's handle, for an Engine.
  static Model handle() { return engine::borrow_model(*model_, *backend_); }

  static void TearDownTestSuite() {
    delete model_;
    delete backend_;
    if (path_ != nullptr) std::filesystem::remove(*path_);
    delete path_;
    path_ = nullptr;
    model_ = nullptr;
    backend_ = nullptr;
  }
  // The synthetic model takes its vocabulary from the shared test data.
  void SetUp() override {
    LUMEN_REQUIRE_TESTDATA();
    if (backend_ == nullptr) GTEST_SKIP() << "no CUDA device";
  }

  static SamplingParams greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }

  // A prompt of ordinary (non-control) token ids, distinct per `salt`.
  static std::vector<int32_t> prompt(int len, int salt) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(300 + (salt * 97 + i * 31) % 20000);
    return p;
  }

  static EngineConfig config(int64_t kv_blocks, int32_t block_size = 4) {
    EngineConfig c;
    c.block_size = block_size;
    c.kv_cache_bytes = kv_blocks * static_cast<int64_t>(model::KvCache::bytes_per_block(
                                       model_->hparams, block_size));
    c.watermark = 0.0;
    return c;
  }

  static std::vector<int32_t> tokens(RequestHandle& h, FinishReason* reason = nullptr) {
    GenerationResult r = h.collect();
    if (reason) *reason = r.finish;
    return r.tokens;
  }

  static void drain(Engine& engine) {
    while (engine.has_unfinished()) engine.step();
  }

  static inline std::string* path_ = nullptr;
  static inline backend::Backend* backend_ = nullptr;
  static inline engine::LoadedModel* model_ = nullptr;
};

}  // namespace lumen::testing
