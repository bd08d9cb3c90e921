// Phi-3's LongRoPE factor sets (Transformer::set_context_length) and its fused matrices: the
// long set once the model's context passes the original one, the short set within it, as
// llama.cpp picks by its n_ctx (the logits goldens arch_phi3 and arch_phi3_short hold each set's
// logits to llama.cpp's); and tensor parallelism refused for fused matrices.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "dist/collectives.h"
#include "gguf/file.h"
#include "lumen_testdata.h"
#include "model/kv_cache.h"
#include "model/synth.h"
#include "model/transformer.h"
#include "util/error.h"

namespace lumen::model {
namespace {

const std::string kVocab = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";

std::vector<float> last_logits(Transformer& transformer, backend::Backend& backend, const HParams& hp,
                               const std::vector<int32_t>& tokens) {
  KvCache cache(backend, hp, 4, 16);
  std::vector<int32_t> positions(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) positions[i] = static_cast<int32_t>(i);
  const std::vector<int32_t> rows = {static_cast<int32_t>(tokens.size() - 1)}, blocks = {0, 1, 2, 3};
  backend::SequenceSlice seq;
  seq.first_token = 0;
  seq.n_tokens = static_cast<int32_t>(tokens.size());
  seq.start_pos = 0;
  seq.block_table = blocks;
  const std::vector<backend::SequenceSlice> seqs = {seq};
  std::vector<float> logits(hp.vocab_size);
  transformer.forward({tokens, positions, seqs, rows}, cache, logits.data());
  return logits;
}

class LongRope : public ::testing::Test {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TESTDATA();
    // Original context 256, stretched to 2048.
    write_synthetic_model({"phi4-mini-tiny", tensor::DType::Q4_0, kVocab, 5, 2, 2}, path_);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  const std::string path_ =
      (std::filesystem::temp_directory_path() / ("lumen_long_rope_" + std::to_string(::getpid()) + ".gguf")).string();
};

TEST_F(LongRope, PicksTheFactorSetByTheContextLength) {
  gguf::GgufFile file = gguf::GgufFile::open(path_);
  const HParams hp = read_hparams(file);
  ASSERT_EQ(hp.rope_scaling.original_context_length, 256u);
  backend::CpuBackend backend(2);
  Transformer model(backend, file, hp);
  EXPECT_FALSE(model.uses_long_rope_factors());  // no context given: the short set
  std::vector<int32_t> tokens;
  for (int32_t i = 0; i < 40; ++i) tokens.push_back(7 + 13 * i);
  const std::vector<float> short_set = last_logits(model, backend, hp, tokens);
  model.set_context_length(1024);
  EXPECT_TRUE(model.uses_long_rope_factors());
  const std::vector<float> long_set = last_logits(model, backend, hp, tokens);
  EXPECT_NE(long_set, short_set);  // the sets rotate differently
  model.set_context_length(256);   // not past the original context
  EXPECT_FALSE(model.uses_long_rope_factors());
  EXPECT_EQ(last_logits(model, backend, hp, tokens), short_set);
}

TEST_F(LongRope, TensorParallelismRefusesFusedMatrices) {
  gguf::GgufFile file = gguf::GgufFile::open(path_);
  const HParams hp = read_hparams(file);
  backend::CpuBackend backend(2);
  const auto comm = dist::single_process_collectives();
  try {
    Transformer model(backend, file, hp, TensorShard{0, 2, comm.get()});
    FAIL() << "a phi3 model was split for tensor parallelism";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fused matrices"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::model
