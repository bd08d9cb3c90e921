// Expert parallelism's whole path (rows out, experts, results back, slot-order sums, gather)
// through one process's collectives, whose all-to-all copies the own segment: the logits must be
// one process's bit for bit, on MoE synth presets with and without a gated shared expert, for a
// prompt batch and for one token (a decode step).
#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <filesystem>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "dist/collectives.h"
#include "gguf/file.h"
#include "model/kv_cache.h"
#include "model/synth.h"
#include "model/transformer.h"

namespace lumen::model {
namespace {

const std::string kVocab = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";

std::vector<float> logits_of(Transformer& transformer, backend::Backend& backend, const HParams& hp,
                             const std::vector<int32_t>& tokens) {
  KvCache cache(backend, hp, 2, 16);
  std::vector<int32_t> positions(tokens.size()), rows(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) positions[i] = rows[i] = static_cast<int32_t>(i);
  const std::vector<int32_t> blocks = {0, 1};
  backend::SequenceSlice seq;
  seq.first_token = 0;
  seq.n_tokens = static_cast<int32_t>(tokens.size());
  seq.start_pos = 0;
  seq.block_table = blocks;
  const std::vector<backend::SequenceSlice> seqs = {seq};
  std::vector<float> logits(rows.size() * hp.vocab_size);
  transformer.forward({tokens, positions, seqs, rows}, cache, logits.data());
  return logits;
}

TEST(ExpertParallelSingleProcess, GivesOneProcessLogitsBitForBit) {
  LUMEN_REQUIRE_TESTDATA();
  for (const char* preset : {"qwen2moe-a2.7b-mini", "olmoe-mini"}) {
    SCOPED_TRACE(preset);
    const std::string path =
        (std::filesystem::temp_directory_path() / (std::string("lumen_ep_") + preset + ".gguf")).string();
    write_synthetic_model({preset, tensor::DType::Q4_0, kVocab, 5, 2, 2}, path);
    {
      gguf::GgufFile file = gguf::GgufFile::open(path);
      const HParams hp = read_hparams(file);
      backend::CpuBackend backend(2);
      const auto comm = dist::single_process_collectives();
      Transformer plain(backend, file, hp);
      Transformer shared(backend, file, hp, {}, {}, ExpertShard{0, 1, comm.get()});
      ASSERT_NE(shared.expert_parallel(), nullptr);
      EXPECT_EQ(shared.weights().bound_bytes, plain.weights().bound_bytes);  // one rank holds every expert
      for (const std::vector<int32_t>& tokens : {std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9}, {42}}) {
        EXPECT_EQ(logits_of(shared, backend, hp, tokens), logits_of(plain, backend, hp, tokens));
      }
      // Every rank counts every expert's load; one rank, nothing crosses between ranks.
      EXPECT_EQ(shared.expert_load()->tokens, plain.expert_load()->tokens);
      EXPECT_EQ(shared.expert_parallel()->traffic().bytes, 0u);
      EXPECT_EQ(shared.expert_parallel()->traffic().token_layers, 2u * 10u);
    }
    std::filesystem::remove(path);
  }
}

}  // namespace
}  // namespace lumen::model
