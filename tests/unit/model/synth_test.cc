#include "model/synth.h"

#include <gtest/gtest.h>

#include "lumen_testdata.h"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "gguf/file.h"
#include "model/hparams.h"
#include "model/presets.h"
#include "tensor/quantize.h"
#include "tokenizer/vocab.h"
#include "util/error.h"

namespace lumen::model {
namespace {

const std::string kVocab = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(Synth, WritesThePresetShapesWithAPaddedVocab) {
  LUMEN_REQUIRE_TESTDATA();
  SynthOptions options{"smollm2-135m", tensor::DType::Q4_0, kVocab, 7, 2, 2};
  std::string path = temp_path("lumen_synth_test.gguf");
  SynthReport report = write_synthetic_model(options, path);
  EXPECT_EQ(report.vocab_size, 49152u);  // llama-spm's 32000 tokens, padded to the preset's

  gguf::GgufFile file = gguf::GgufFile::open(path);
  HParams hp = read_hparams(file);
  EXPECT_EQ(hp.architecture, "llama");
  EXPECT_EQ(hp.block_count, 2u);
  EXPECT_EQ(hp.embedding_length, 576u);
  EXPECT_EQ(hp.head_count, 9u);
  EXPECT_EQ(hp.head_count_kv, 3u);
  EXPECT_EQ(hp.vocab_size, 49152u);
  EXPECT_EQ(file.tensors().size(), 1 + 2 * 9 + 1u);  // embedding, 9 per layer, output norm
  EXPECT_EQ(file.tensor("token_embd.weight").dims, (std::vector<int64_t>{576, 49152}));
  EXPECT_EQ(file.tensor("blk.1.attn_k.weight").dims, (std::vector<int64_t>{576, 192}));
  EXPECT_EQ(file.tensor("blk.0.ffn_down.weight").dims, (std::vector<int64_t>{1536, 576}));
  EXPECT_EQ(file.tensor("blk.0.ffn_down.weight").type, tensor::DType::Q4_0);
  EXPECT_EQ(file.find_tensor("output.weight"), nullptr);  // tied embeddings

  tokenizer::Vocab vocab = tokenizer::load_vocab(file.metadata());
  EXPECT_EQ(vocab.size(), 49152u);
  EXPECT_EQ(vocab.tokens[1], "<s>");
  EXPECT_EQ(vocab.types[40000], tokenizer::TokenType::Unused);

  // Weights look like initialised weights: mean ~0, std ~0.02; norms ~1.
  const auto& q = file.tensor("blk.0.attn_q.weight");
  std::vector<float> row(576);
  double sum = 0, sum_sq = 0;
  size_t row_bytes = *tensor::row_bytes(q.type, 576);
  for (int r = 0; r < 64; ++r) {
    tensor::dequantize_row(q.type, q.data + r * row_bytes, row.data(), 576);
    for (float v : row) { sum += v; sum_sq += v * v; }
  }
  double n = 64.0 * 576, mean = sum / n, stddev = std::sqrt(sum_sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(stddev, 0.02, 0.003);
  const float* norm = reinterpret_cast<const float*>(file.tensor("output_norm.weight").data);
  EXPECT_NEAR(norm[0], 1.0f, 0.3f);
  std::remove(path.c_str());
}

std::vector<char> file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Synth, SameSeedSameBytesWhateverTheThreadCount) {
  // Whole-model synthesis takes about 45 s under the sanitizers; what it checks (same bytes, the
  // layout) is not about memory, and the Release stage runs it.
  if (LUMEN_UNDER_SANITIZERS) GTEST_SKIP() << "run in the Release build";
  LUMEN_REQUIRE_TESTDATA();
  std::string a = temp_path("lumen_synth_a.gguf"), b = temp_path("lumen_synth_b.gguf");
  write_synthetic_model({"smollm2-135m", tensor::DType::Q8_0, kVocab, 3, 1, 1}, a);
  write_synthetic_model({"smollm2-135m", tensor::DType::Q8_0, kVocab, 3, 1, 2}, b);
  EXPECT_EQ(file_bytes(a), file_bytes(b));
  write_synthetic_model({"smollm2-135m", tensor::DType::Q8_0, kVocab, 4, 1, 2}, b);
  EXPECT_NE(file_bytes(a), file_bytes(b));
  std::remove(a.c_str());
  std::remove(b.c_str());
}

// The MoE presets: expert metadata, 3-D expert tensors, F32 routers (as llama.cpp's quantizer
// leaves them), and the same bytes whatever the thread count: the logits goldens of
// tests/golden/logits/moe_*.json name these files by their sha256.
TEST(Synth, MixtureOfExpertsPresetsWriteExpertsAndStayDeterministic) {
  // Whole-model synthesis takes about 45 s under the sanitizers; what it checks (same bytes, the
  // layout) is not about memory, and the Release stage runs it.
  if (LUMEN_UNDER_SANITIZERS) GTEST_SKIP() << "run in the Release build";
  LUMEN_REQUIRE_TESTDATA();
  std::string a = temp_path("lumen_synth_moe_a.gguf"), b = temp_path("lumen_synth_moe_b.gguf");
  write_synthetic_model({"qwen2moe-a2.7b-mini", tensor::DType::Q4_1, kVocab, 7, 1, 1}, a);
  write_synthetic_model({"qwen2moe-a2.7b-mini", tensor::DType::Q4_1, kVocab, 7, 1, 2}, b);
  EXPECT_EQ(file_bytes(a), file_bytes(b));
  {
    gguf::GgufFile file = gguf::GgufFile::open(a);
    EXPECT_EQ(file.metadata().get_string("general.architecture"), "qwen2moe");
    EXPECT_EQ(file.metadata().get_unsigned("qwen2moe.expert_count"), 60u);
    EXPECT_EQ(file.metadata().get_unsigned("qwen2moe.expert_used_count"), 4u);
    EXPECT_EQ(file.metadata().get_unsigned("qwen2moe.expert_feed_forward_length"), 352u);
    EXPECT_EQ(file.metadata().get_unsigned("qwen2moe.expert_shared_feed_forward_length"), 1408u);
    EXPECT_EQ(file.tensor("blk.0.ffn_up_exps.weight").dims, (std::vector<int64_t>{512, 352, 60}));
    EXPECT_EQ(file.tensor("blk.0.ffn_down_exps.weight").dims, (std::vector<int64_t>{352, 512, 60}));
    EXPECT_EQ(file.tensor("blk.0.ffn_up_exps.weight").type, tensor::DType::Q4_1);
    EXPECT_EQ(file.tensor("blk.0.ffn_gate_inp.weight").type, tensor::DType::F32);
    EXPECT_EQ(file.tensor("blk.0.ffn_gate_inp_shexp.weight").dims, (std::vector<int64_t>{512}));
  }
  // The mixtral variant is written as llama.cpp's "llama" with experts.
  write_synthetic_model({"mixtral-mini", tensor::DType::Q4_0, kVocab, 7, 1, 2}, b);
  {
    gguf::GgufFile file = gguf::GgufFile::open(b);
    EXPECT_EQ(file.metadata().get_string("general.architecture"), "llama");
    EXPECT_EQ(file.metadata().get_unsigned("llama.expert_count"), 8u);
    EXPECT_EQ(file.tensor("blk.0.ffn_gate_exps.weight").dims, (std::vector<int64_t>{512, 1792, 8}));
    EXPECT_EQ(file.find_tensor("blk.0.ffn_gate.weight"), nullptr);
  }
  std::remove(a.c_str());
  std::remove(b.c_str());
}

TEST(Synth, KQuantFallsBackWhereRowsAreNotSuperBlocks) {
  LUMEN_REQUIRE_TESTDATA();
  std::string path = temp_path("lumen_synth_k.gguf");
  SynthReport report =
      write_synthetic_model({"smollm2-135m", tensor::DType::Q4_K, kVocab, 1, 1, 2}, path);
  gguf::GgufFile file = gguf::GgufFile::open(path);
  EXPECT_EQ(file.tensor("blk.0.ffn_down.weight").type, tensor::DType::Q4_K);  // 1536 = 6 x 256
  EXPECT_EQ(file.tensor("blk.0.attn_q.weight").type, tensor::DType::Q5_0);    // 576 is not
  EXPECT_FALSE(report.substitutions.empty());
  std::remove(path.c_str());
}

TEST(Synth, Iq4XsFallsBackToIq4NlWhereRowsAreNotSuperBlocks) {
  LUMEN_REQUIRE_TESTDATA();
  std::string path = temp_path("lumen_synth_iq4.gguf");
  SynthReport report = write_synthetic_model({"smollm2-135m", tensor::DType::IQ4_XS, kVocab, 1, 1, 2}, path);
  gguf::GgufFile file = gguf::GgufFile::open(path);
  EXPECT_EQ(file.tensor("blk.0.ffn_down.weight").type, tensor::DType::IQ4_XS);  // 1536 = 6 x 256
  EXPECT_EQ(file.tensor("blk.0.attn_q.weight").type, tensor::DType::IQ4_NL);    // 576 is not, as llama.cpp
  EXPECT_FALSE(report.substitutions.empty());
  std::remove(path.c_str());
}

// llama.cpp's Q4_K_M recipe on 4 layers (its use_more_bits: the first eighth, none here; layers
// from 7/8 of the depth on, 3; every third from the first eighth, 2): Q6_K for attn_v and
// ffn_down in layers 2 and 3, Q4_K elsewhere.
TEST(Synth, Q4KMMixesQ6KWhereLlamaCppDoes) {
  LUMEN_REQUIRE_TESTDATA();
  std::string path = temp_path("lumen_synth_q4km.gguf");
  SynthOptions options{"llama3-mini", tensor::DType::Q4_K, kVocab, 1, 4, 2};
  options.q4_k_m = true;
  write_synthetic_model(options, path);
  gguf::GgufFile file = gguf::GgufFile::open(path);
  for (uint64_t layer = 0; layer < 4; ++layer) {
    const tensor::DType want = layer >= 2 ? tensor::DType::Q6_K : tensor::DType::Q4_K;
    EXPECT_EQ(file.tensor(fmt::format("blk.{}.attn_v.weight", layer)).type, want) << layer;
    EXPECT_EQ(file.tensor(fmt::format("blk.{}.ffn_down.weight", layer)).type, want) << layer;
    EXPECT_EQ(file.tensor(fmt::format("blk.{}.attn_q.weight", layer)).type, tensor::DType::Q4_K) << layer;
  }
  if (file.find_tensor("output.weight") != nullptr) {
    EXPECT_EQ(file.tensor("output.weight").type, tensor::DType::Q6_K);
  } else {  // the token embedding doubles as the output: typed as the output is
    const gguf::TensorInfo& embedding = file.tensor("token_embd.weight");
    EXPECT_EQ(embedding.type, embedding.dims[0] % 256 == 0 ? tensor::DType::Q6_K : tensor::DType::Q8_0);
  }
  options.type = tensor::DType::Q8_0;  // the mixture is Q4_K's
  EXPECT_THROW(write_synthetic_model(options, path), Error);
  std::remove(path.c_str());
}

// llama-quantize's MXFP4_MOE (gpt-oss's published files): the experts' 3-D tensors MXFP4, every
// other matrix Q8_0, file type 38.
TEST(Synth, Mxfp4MoeTypesTheExpertsMxfp4AndTheRestQ8) {
  LUMEN_REQUIRE_TESTDATA();
  std::string path = temp_path("lumen_synth_mxfp4.gguf");
  SynthOptions options{"gpt-oss-mini", tensor::DType::Q8_0, kVocab, 1, 2, 2};
  options.mxfp4_moe = true;
  write_synthetic_model(options, path);
  gguf::GgufFile file = gguf::GgufFile::open(path);
  for (uint64_t layer = 0; layer < 2; ++layer) {
    for (const char* name : {"ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"}) {
      EXPECT_EQ(file.tensor(fmt::format("blk.{}.{}.weight", layer, name)).type, tensor::DType::MXFP4) << name;
      EXPECT_EQ(file.tensor(fmt::format("blk.{}.{}.bias", layer, name)).type, tensor::DType::F32) << name;
    }
    EXPECT_EQ(file.tensor(fmt::format("blk.{}.attn_q.weight", layer)).type, tensor::DType::Q8_0);
    EXPECT_EQ(file.tensor(fmt::format("blk.{}.attn_sinks.weight", layer)).type, tensor::DType::F32);
  }
  EXPECT_EQ(file.tensor("output.weight").type, tensor::DType::Q8_0);
  EXPECT_EQ(file.metadata().find_unsigned("general.file_type").value_or(0), 38u);
  // The mini preset leaves YaRN out (presets.cc says why); the real shape has gpt-oss's.
  EXPECT_FALSE(file.metadata().find_string("gpt-oss.rope.scaling.type").has_value());
  const Preset& full = *find_preset("gpt-oss-20b");
  EXPECT_EQ(full.rope_scaling, "yarn");
  EXPECT_EQ(full.rope_scaling_factor, 32.0);
  EXPECT_EQ(full.rope_original_context, 4096u);
  options.type = tensor::DType::Q4_0;  // the mixture keeps Q8_0 beside its experts
  EXPECT_THROW(write_synthetic_model(options, path), Error);
  std::remove(path.c_str());
}

TEST(Synth, Llama3RopeFactors) {
  LUMEN_REQUIRE_TESTDATA();
  const Preset& llama1b = *find_preset("llama-1b");
  auto f = llama3_rope_factors(llama1b, 64);
  ASSERT_EQ(f.size(), 32u);
  EXPECT_EQ(f[0], 1.0f);    // short wavelengths unscaled
  EXPECT_EQ(f[31], 32.0f);  // long wavelengths scaled by the full factor
  for (size_t i = 1; i < f.size(); ++i) EXPECT_GE(f[i], f[i - 1]);  // smooth in between
  EXPECT_GT(f[20], 1.0f);
}

TEST(Synth, BadOptionsAreErrors) {
  LUMEN_REQUIRE_TESTDATA();
  std::string path = temp_path("lumen_synth_bad.gguf");
  EXPECT_THROW(write_synthetic_model({"gpt-5", tensor::DType::Q4_0, kVocab, 1, 1, 1}, path), Error);
  EXPECT_THROW(write_synthetic_model({"llama-1b", tensor::DType::Q4_0, kVocab, 1, 99, 1}, path), Error);
  EXPECT_THROW(write_synthetic_model({"llama-1b", tensor::DType::Q4_0, "/missing.gguf", 1, 1, 1}, path),
               Error);
  EXPECT_FALSE(std::filesystem::exists(path));
}

}  // namespace
}  // namespace lumen::model
