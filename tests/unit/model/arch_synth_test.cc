// `lumen synth` writes every registered architecture from its descriptor, and what it writes
// passes the same descriptor's validation and runs a forward pass.
#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <cmath>
#include <filesystem>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/file.h"
#include "model/arch/architecture.h"
#include "model/kv_cache.h"
#include "model/presets.h"
#include "model/state_cache.h"
#include "model/synth.h"
#include "model/transformer.h"

namespace lumen::model {
namespace {

const std::string kVocab = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";

// The preset of the architecture with the smallest embedding matrix: the quickest to write.
const Preset* smallest_preset(const std::string& arch) {
  const Preset* best = nullptr;
  for (const Preset& p : presets()) {
    if (p.architecture != arch) continue;
    if (best == nullptr || p.embedding_length * p.vocab_size < best->embedding_length * best->vocab_size) best = &p;
  }
  return best;
}

TEST(ArchSynth, EveryRegisteredArchitectureSynthesizesLoadsAndRuns) {
  LUMEN_REQUIRE_TESTDATA();
  for (const std::string& arch : architecture_names()) {
    SCOPED_TRACE(arch);
    const Preset* preset = smallest_preset(arch);
    ASSERT_NE(preset, nullptr) << "every architecture needs a preset, so synth and this test cover it";
    const std::string path = (std::filesystem::temp_directory_path() / ("lumen_arch_synth_" + arch + ".gguf")).string();
    write_synthetic_model({std::string(preset->name), tensor::DType::Q4_0, kVocab, 11, 1, 2}, path);
    {
      gguf::GgufFile file = gguf::GgufFile::open(path);
      HParams hp = read_hparams(file);
      EXPECT_EQ(hp.architecture, find_architecture(arch)->name);
      EXPECT_EQ(architecture_for(hp).id(), arch);
      backend::CpuBackend backend(2);
      Transformer transformer(backend, file, hp);  // validates every tensor against the descriptor
      KvCache cache(backend, hp, 1, 16);
      const std::vector<int32_t> tokens = {1, 2, 3, 4}, positions = {0, 1, 2, 3}, rows = {3};
      const std::vector<int32_t> blocks = {0};
      backend::SequenceSlice seq;
      seq.first_token = 0;
      seq.n_tokens = 4;
      seq.start_pos = 0;
      seq.block_table = blocks;
      const std::vector<backend::SequenceSlice> seqs = {seq};
      // A state-space or RWKV model runs from a state slot (zeroed: the slice starts at position 0).
      std::unique_ptr<StateCache> states;
      const std::vector<int32_t> slots = {0};
      if (has_recurrent_state(hp)) states = std::make_unique<StateCache>(backend, hp, 1);
      if (transformer.architecture().features.encoder) {  // embeddings only: no logits to check
        std::vector<float> hidden(hp.embedding_length);
        transformer.forward_hidden({tokens, positions, seqs, rows}, cache, hidden.data());
        for (float v : hidden) ASSERT_TRUE(std::isfinite(v));
      } else {
        std::vector<float> logits(hp.vocab_size);
        transformer.forward(
            {tokens, positions, seqs, rows, {}, states.get(), states ? slots : std::span<const int32_t>()}, cache,
            logits.data());
        for (float v : logits) ASSERT_TRUE(std::isfinite(v));
      }
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace lumen::model
