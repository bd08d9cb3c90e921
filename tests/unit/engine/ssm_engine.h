#pragma once
// The state-space engine tests' model and helpers: `lumen synth mamba2-mini` (or a hybrid
// preset, engine_hybrid_test.cc) cut to 2 blocks,
// the bare single-sequence forward pass as the reference, and engine configs whose memory
// budget holds the KV blocks asked for and every sequence's state.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/single_sequence_forward.h"
#include "lumen/engine.h"
#include "lumen_testdata.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"
#include "model/synth.h"
#include "sampling/sampler.h"
#include "synth_engine.h"

namespace lumen::testing {

class SsmEngineTest : public SynthEngineTest {
 protected:
  static void SetUpTestSuite() { set_up_state_model("mamba2-mini"); }
  // The preset cut to 2 blocks (a hybrid's: a Mamba 2 layer, then an attention layer).
  static void set_up_state_model(const char* preset) {
    if (!have_testdata()) return;
    path_ = new std::string(temp_model_path("ssm"));
    model::SynthOptions options;
    options.preset = preset;
    options.type = tensor::DType::Q4_1;
    options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
    options.seed = 5;
    options.block_count = 2;
    options.threads = 2;
    model::write_synthetic_model(options, *path_);
    backend_ = new backend::CpuBackend(2);
    model_ = new engine::LoadedModel(engine::LoadedModel::load(*path_, *backend_));
  }

  static std::vector<int32_t> prompt(int len, int salt) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(200 + (salt * 131 + i * 47) % 30000);
    return p;
  }
  // The bare forward pass, alone, in prompt chunks of 7 (so it, too, carries its state across
  // chunks).
  static std::vector<int32_t> alone(const std::vector<int32_t>& prompt, int64_t n) {
    engine::SingleSequenceForward forward(*model_, *backend_, 256, 7);
    std::vector<int32_t> out;
    std::span<const float> logits = forward.feed(prompt);
    for (int64_t i = 0; i < n; ++i) {
      int32_t token = sampling::argmax(logits);
      out.push_back(token);
      if (i + 1 < n) logits = forward.feed(std::span(&token, 1));
    }
    return out;
  }
  // kv_blocks blocks, and a memory budget with room beside them for the state of every
  // sequence max_num_seqs lets run (the states come out of the same budget).
  static EngineConfig config(int64_t kv_blocks) {
    EngineConfig c;
    c.block_size = 8;
    c.max_num_batched_tokens = 24;  // prompts prefill in chunks, beside the others' decodes
    c.num_kv_blocks = kv_blocks;
    c.kv_cache_bytes = kv_blocks * block_bytes() + c.max_num_seqs * slot_bytes();
    c.watermark = 0.0;
    return c;
  }
  static int64_t block_bytes() { return static_cast<int64_t>(model::KvCache::bytes_per_block(model_->hparams, 8)); }
  static int64_t slot_bytes() { return static_cast<int64_t>(model::StateCache::bytes_per_slot(model_->hparams)); }
  static void drain(Engine& engine) {
    while (engine.has_unfinished()) engine.step();
  }
};

}  // namespace lumen::testing
