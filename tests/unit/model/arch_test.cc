// The architecture descriptors drive the loader's validation: a file must hold exactly the
// tensors its architecture declares, in the declared shapes and types.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gguf/file.h"
#include "model/arch/architecture.h"
#include "model/rope_config.h"
#include "model/weights.h"
#include "tiny_model.h"
#include "util/error.h"

namespace lumen::model {
namespace {

using testing::TinyTensor;
using testing::write_tiny_model;

// The error validate_tensors throws for the file, or "" when it accepts it.
std::string validation_error(const std::string& path) {
  gguf::GgufFile file = gguf::GgufFile::open(path);
  std::string error;
  try {
    HParams hp = read_hparams(file);
    validate_tensors(file, architecture_for(hp), hp);
  } catch (const Error& e) {
    error = e.what();
  }
  std::filesystem::remove(path);
  return error;
}

TinyTensor* find(std::vector<TinyTensor>& tensors, const std::string& name) {
  for (TinyTensor& t : tensors) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

void drop(std::vector<TinyTensor>& tensors, const std::string& name) {
  std::erase_if(tensors, [&](const TinyTensor& t) { return t.name == name; });
}

TEST(Architecture, EveryRegisteredArchitectureAcceptsItsOwnDeclaration) {
  ASSERT_FALSE(architecture_names().empty());
  for (const std::string& name : architecture_names()) {
    EXPECT_EQ(validation_error(write_tiny_model(name, "lumen_arch_ok.gguf")), "") << name;
  }
}

TEST(Architecture, OptionalTensorsMayBeLeftOut) {
  std::string error = validation_error(write_tiny_model("llama", "lumen_arch_tied.gguf", [](auto& t) {
    drop(t, "output.weight");
    drop(t, "rope_freqs.weight");
  }));
  EXPECT_EQ(error, "");
}

TEST(Architecture, RefusesAMissingTensorNamingIt) {
  std::string error = validation_error(
      write_tiny_model("llama", "lumen_arch_missing.gguf", [](auto& t) { drop(t, "blk.1.attn_k.weight"); }));
  EXPECT_NE(error.find("missing tensor 'blk.1.attn_k.weight'"), std::string::npos) << error;
}

TEST(Architecture, RefusesATensorTheArchitectureDoesNotDeclare) {
  std::string error = validation_error(write_tiny_model("llama", "lumen_arch_extra.gguf", [](auto& t) {
    t.push_back({"blk.0.attn_q.bias", tensor::DType::F32, {64}});  // qwen2's, not llama's
  }));
  EXPECT_NE(error.find("'blk.0.attn_q.bias' is not part of the llama model"), std::string::npos) << error;
}

TEST(Architecture, RefusesABlockBeyondBlockCount) {
  std::string error = validation_error(write_tiny_model("llama", "lumen_arch_block.gguf", [](auto& t) {
    t.push_back({"blk.2.ffn_norm.weight", tensor::DType::F32, {64}});
  }));
  EXPECT_NE(error.find("blk.2.ffn_norm.weight"), std::string::npos) << error;
}

TEST(Architecture, RefusesAWrongShape) {
  std::string error = validation_error(write_tiny_model("qwen2", "lumen_arch_shape.gguf", [](auto& t) {
    find(t, "blk.0.ffn_down.weight")->dims = {64, 128};  // up's shape, not down's
  }));
  EXPECT_NE(error.find("tensor 'blk.0.ffn_down.weight' has shape 64 x 128, expected 128 x 64"), std::string::npos)
      << error;
}

TEST(Architecture, RefusesAWrongType) {
  std::string norm = validation_error(write_tiny_model("llama", "lumen_arch_norm_type.gguf", [](auto& t) {
    find(t, "blk.1.attn_norm.weight")->type = tensor::DType::F16;
  }));
  EXPECT_NE(norm.find("tensor 'blk.1.attn_norm.weight' is F16, expected F32"), std::string::npos) << norm;
  std::string matrix = validation_error(write_tiny_model("llama", "lumen_arch_matrix_type.gguf", [](auto& t) {
    find(t, "blk.0.attn_v.weight")->type = tensor::DType::I32;
  }));
  EXPECT_NE(matrix.find("tensor 'blk.0.attn_v.weight' is I32"), std::string::npos) << matrix;
}

TEST(Architecture, Qwen2RequiresItsBiases) {
  std::string error = validation_error(
      write_tiny_model("qwen2", "lumen_arch_bias.gguf", [](auto& t) { drop(t, "blk.0.attn_v.bias"); }));
  EXPECT_NE(error.find("missing tensor 'blk.0.attn_v.bias'"), std::string::npos) << error;
}

// Qwen3 is llama's block with per-head query and key norms: a file without them is not Qwen3.
TEST(Architecture, Qwen3RequiresItsQkNorms) {
  std::string error = validation_error(
      write_tiny_model("qwen3", "lumen_arch_qk_norm.gguf", [](auto& t) { drop(t, "blk.1.attn_k_norm.weight"); }));
  EXPECT_NE(error.find("missing tensor 'blk.1.attn_k_norm.weight'"), std::string::npos) << error;
}

// llama.cpp's llama graph switches to experts when the file has them; Lumen's registry picks
// the mixtral variant of "llama" for such a file.
TEST(Architecture, LlamaWithExpertsIsTheMixtralVariant) {
  HParams hp = testing::tiny_hparams("llama");
  EXPECT_EQ(architecture_for(hp).id(), "llama");
  EXPECT_EQ(architecture_for(hp).features.ffn, FfnKind::Dense);
  hp.expert_count = 8;
  hp.expert_used_count = 2;
  const Architecture& moe = architecture_for(hp);
  EXPECT_EQ(moe.id(), "mixtral");
  EXPECT_EQ(moe.name, "llama");
  EXPECT_EQ(moe.features.ffn, FfnKind::MixtureOfExperts);
  EXPECT_TRUE(moe.features.expert_weights_norm);
  // Its experts are feed_forward_length wide, as llama.cpp sizes them for this architecture.
  for (const TensorSpec& t : moe.tensors) {
    if (t.name == "ffn_up_exps.weight") {
      EXPECT_EQ(t.dims(hp), (std::vector<int64_t>{64, 128, 8}));
    }
    EXPECT_NE(t.name, "ffn_up.weight");
  }
}

TEST(Architecture, MixtureOfExpertsFilesNeedTheirExpertTensors) {
  std::string shared = validation_error(write_tiny_model("qwen2moe", "lumen_arch_shexp.gguf",
                                                         [](auto& t) { drop(t, "blk.1.ffn_gate_inp_shexp.weight"); }));
  EXPECT_NE(shared.find("missing tensor 'blk.1.ffn_gate_inp_shexp.weight'"), std::string::npos) << shared;
  // One expert too few in the 3-D tensor: 4 experts of 32 rows of 64.
  std::string experts = validation_error(write_tiny_model("qwen3moe", "lumen_arch_exps.gguf", [](auto& t) {
    find(t, "blk.0.ffn_down_exps.weight")->dims = {32, 64, 3};
  }));
  EXPECT_NE(experts.find("tensor 'blk.0.ffn_down_exps.weight' has shape 32 x 64 x 3, expected 32 x 64 x 4"),
            std::string::npos)
      << experts;
  // A dense llama file carrying an expert tensor is refused by name.
  std::string extra = validation_error(write_tiny_model("llama", "lumen_arch_dense_exps.gguf", [](auto& t) {
    t.push_back({"blk.0.ffn_gate_inp.weight", tensor::DType::F32, {64, 4}});
  }));
  EXPECT_NE(extra.find("'blk.0.ffn_gate_inp.weight' is not part of the llama model"), std::string::npos) << extra;
}

TEST(Architecture, UnknownArchitectureListsTheRegisteredOnes) {
  HParams hp;
  hp.architecture = "gpt2";
  try {
    architecture_for(hp);
    FAIL() << "gpt2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("supported: llama, qwen2, gemma2, gemma3"), std::string::npos) << e.what();
  }
}

// A feature with a descriptor field but no forward-pass code path is refused by name.
TEST(Architecture, RefusesFeaturesTheForwardPassDoesNotRun) {
  const HParams hp = testing::tiny_hparams("llama");
  auto error_for = [&](auto change) {
    Architecture arch = *find_architecture("llama");
    change(arch.features);
    try {
      require_supported_features(arch, hp);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error_for([](BlockFeatures&) {}), "");
  // A mixture of experts runs, but needs the file's expert count.
  EXPECT_NE(error_for([](BlockFeatures& f) { f.ffn = FfnKind::MixtureOfExperts; }).find("llama.expert_count"),
            std::string::npos);
  // Latent attention runs, but needs the file's per-head sizes (the split attn_k_b / attn_v_b
  // layout): a file without them gets a message saying to convert it again.
  EXPECT_NE(error_for([](BlockFeatures& f) { f.attention = AttentionKind::MultiHeadLatent; }).find("convert the model again"),
            std::string::npos);
  // Sliding windows run, but need the window from the file.
  EXPECT_NE(error_for([](BlockFeatures& f) {
              f.sliding_window = SlidingWindow::AllLayers;
            }).find("llama.attention.sliding_window"),
            std::string::npos);
}

// Gemma 2 caps its scores and logits at 50 and 30 unless the file says otherwise; Gemma 3 reads
// a final cap from the file (none by default); llama reads neither key, as in llama.cpp.
TEST(Architecture, SoftCapsComeFromTheArchitectureOrTheFile) {
  HParams hp = testing::tiny_hparams("gemma2");
  const Architecture& gemma2 = *find_architecture("gemma2");
  EXPECT_EQ(resolved_softcaps(gemma2, hp).attention, 50.0f);
  EXPECT_EQ(resolved_softcaps(gemma2, hp).final_logits, 30.0f);
  hp.attention_softcap = 20.0;
  hp.final_logit_softcap = 7.5;
  EXPECT_EQ(resolved_softcaps(gemma2, hp).attention, 20.0f);
  EXPECT_EQ(resolved_softcaps(gemma2, hp).final_logits, 7.5f);

  HParams g3 = testing::tiny_hparams("gemma3");
  const Architecture& gemma3 = *find_architecture("gemma3");
  EXPECT_EQ(resolved_softcaps(gemma3, g3).final_logits, 0.0f);
  g3.final_logit_softcap = 30.0;
  g3.attention_softcap = 50.0;  // gemma3 does not read this key
  EXPECT_EQ(resolved_softcaps(gemma3, g3).final_logits, 30.0f);
  EXPECT_EQ(resolved_softcaps(gemma3, g3).attention, 0.0f);

  HParams llama = testing::tiny_hparams("llama");
  llama.final_logit_softcap = 30.0;
  llama.attention_softcap = 50.0;
  EXPECT_EQ(resolved_softcaps(*find_architecture("llama"), llama).final_logits, 0.0f);
  EXPECT_EQ(resolved_softcaps(*find_architecture("llama"), llama).attention, 0.0f);
  EXPECT_NO_THROW(require_supported_features(*find_architecture("llama"), llama));
}

TEST(Architecture, Gemma2AlternatesLocalAndGlobalLayersFromTheFirst) {
  HParams hp = testing::tiny_hparams("gemma2");
  hp.block_count = 5;
  hp.sliding_window = 4096;
  EXPECT_EQ(layer_sliding_windows(*find_architecture("gemma2"), hp), (std::vector<int64_t>{4096, 0, 4096, 0, 4096}));
}

// llama.cpp's gemma2: the local layers keep the global rope, scaling included, and take
// rope.freq_base_swa's base only when the file has one; Gemma 3's local rope is its own.
TEST(Architecture, Gemma2LocalLayersRotateAsTheGlobalOnesUnlessTheFileGivesTheirBase) {
  HParams hp = testing::tiny_hparams("gemma2");
  hp.rope_freq_base = 20000.0;
  hp.rope_scaling.type = "linear";
  hp.rope_scaling.factor = 2.0;
  const Architecture& gemma2 = *find_architecture("gemma2");
  const backend::RopeConfig global = rope_config(hp, gemma2, nullptr);
  backend::RopeConfig local = local_rope_config(global, hp, gemma2);
  EXPECT_EQ(local.freq_base, 20000.0);
  EXPECT_EQ(local.scaling, global.scaling);
  EXPECT_EQ(local.scaling_factor, global.scaling_factor);
  hp.rope_freq_base_local = 5000.0;
  local = local_rope_config(global, hp, gemma2);
  EXPECT_EQ(local.freq_base, 5000.0);
  EXPECT_EQ(local.scaling, global.scaling);
  EXPECT_EQ(local.scaling_factor, global.scaling_factor);
  // The same key means nothing to an architecture with one rope for every layer.
  const Architecture& llama = *find_architecture("llama");
  hp.architecture = "llama";
  EXPECT_EQ(local_rope_config(rope_config(hp, llama, nullptr), hp, llama).freq_base, 20000.0);
}

TEST(Architecture, Gemma3IsFiveLocalLayersToOneGlobalUnlessTheFileSaysOtherwise) {
  HParams hp = testing::tiny_hparams("gemma3");
  hp.block_count = 8;
  hp.sliding_window = 512;
  const Architecture& gemma3 = *find_architecture("gemma3");
  EXPECT_EQ(layer_sliding_windows(gemma3, hp), (std::vector<int64_t>{512, 512, 512, 512, 512, 0, 512, 512}));
  hp.sliding_window_period = 2;
  EXPECT_EQ(layer_sliding_windows(gemma3, hp), (std::vector<int64_t>{512, 0, 512, 0, 512, 0, 512, 0}));
  hp.sliding_window_period = 0;  // llama.cpp: every layer local
  EXPECT_EQ(layer_sliding_windows(gemma3, hp), (std::vector<int64_t>(8, 512)));
  hp.sliding_window_layers = {false, true, true, false, false, false, false, true};  // flags win
  EXPECT_EQ(layer_sliding_windows(gemma3, hp), (std::vector<int64_t>{0, 512, 512, 0, 0, 0, 0, 512}));
}

TEST(Architecture, SlidingWindowsFollowTheDeclaredPattern) {
  HParams hp = testing::tiny_hparams("llama");
  hp.block_count = 6;
  hp.sliding_window = 32;
  Architecture arch = *find_architecture("llama");
  // llama declares none: the file's window is ignored, as llama.cpp ignores it.
  EXPECT_EQ(layer_sliding_windows(arch, hp), (std::vector<int64_t>(6, 0)));
  arch.features.sliding_window = SlidingWindow::AllLayers;
  EXPECT_EQ(layer_sliding_windows(arch, hp), (std::vector<int64_t>(6, 32)));
  arch.features.sliding_window = SlidingWindow::Pattern;
  arch.features.sliding_window_period = 3;  // two local layers, then a global one
  EXPECT_EQ(layer_sliding_windows(arch, hp), (std::vector<int64_t>{32, 32, 0, 32, 32, 0}));
}

}  // namespace
}  // namespace lumen::model
