// Refusals at load, never inside a step: a model whose architecture or weight types a backend
// lacks is refused when it is loaded, before any weight is uploaded, and an engine whose
// options ask for what the backend lacks is refused when it is built, before its KV cache is
// allocated, each with one message naming everything missing. The backend here declares less
// than the CPU and runs no op (limited_backend.h), so a refusal that came from an op would fail
// the test with another message.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <ostream>
#include <string>

#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "limited_backend.h"
#include "lumen/engine.h"
#include "lumen/image_encoder.h"
#include "lumen_testdata.h"
#include "model/synth.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

using backend::BackendFeature;
using backend::OpKind;
using tensor::DType;

std::string synth(const std::string& preset, DType type, uint64_t layers) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("lumen_needs_" + preset + "_" + std::string(tensor::dtype_name(type)) +
                                                 "_" + std::to_string(::getpid()) + ".gguf"))
          .string();
  model::SynthOptions options;
  options.preset = preset;
  options.type = type;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.seed = 5;
  options.block_count = layers;
  options.threads = 2;
  model::write_synthetic_model(options, path);
  return path;
}

// The message a load on `b` throws ("" when it loads), and how many weights it uploaded.
struct LoadResult {
  std::string error;
  int64_t uploads = 0;
};
LoadResult load_on(LimitedBackend& b, const std::string& path) {
  OpCounter counter;
  b.add_observer(&counter);
  LoadResult r;
  try {
    engine::LoadedModel model = engine::LoadedModel::load(path, b);
  } catch (const Error& e) {
    r.error = e.what();
  }
  b.remove_observer(&counter);
  r.uploads = counter.count(OpKind::UploadWeights);
  return r;
}

LimitedSupport without(std::initializer_list<BackendFeature> features) {
  LimitedSupport s = everything();
  for (BackendFeature f : features) s.features.erase(f);
  return s;
}

struct ArchCase {
  const char* preset;
  uint64_t layers;
  std::vector<BackendFeature> needs;  // every optional feature the architecture asks for
};

// ctest's names show the preset, not the case's bytes.
void PrintTo(const ArchCase& c, std::ostream* os) { *os << c.preset; }

class ModelLoadRefusal : public ::testing::TestWithParam<ArchCase> {
 protected:
  void SetUp() override { LUMEN_REQUIRE_TESTDATA(); }
};

// Without any one of its features the model is refused before a weight is uploaded, naming it;
// without all of them, naming all; with all of them it loads (the check refuses nothing more).
TEST_P(ModelLoadRefusal, IsRefusedBeforeAnyUploadNamingWhatIsMissing) {
  const ArchCase& c = GetParam();
  const std::string path = synth(c.preset, DType::Q8_0, c.layers);
  for (BackendFeature f : c.needs) {
    LimitedBackend b(without({f}));
    const LoadResult r = load_on(b, path);
    EXPECT_NE(r.error.find(std::string(backend::backend_feature_name(f))), std::string::npos) << r.error;
    EXPECT_NE(r.error.find("which the limited backend does not run yet; use --device cpu"), std::string::npos)
        << r.error;
    EXPECT_EQ(r.uploads, 0) << c.preset;
  }
  LimitedSupport none = everything();
  for (BackendFeature f : c.needs) none.features.erase(f);
  LimitedBackend lacking_all(none);
  const LoadResult all = load_on(lacking_all, path);
  for (BackendFeature f : c.needs) {
    EXPECT_NE(all.error.find(std::string(backend::backend_feature_name(f))), std::string::npos) << all.error;
  }
  LimitedBackend full(everything());
  const LoadResult ok = load_on(full, path);
  EXPECT_EQ(ok.error, "");
  EXPECT_GT(ok.uploads, 0);
  std::filesystem::remove(path);
}

INSTANTIATE_TEST_SUITE_P(
    Architectures, ModelLoadRefusal,
    ::testing::Values(ArchCase{"qwen3moe-mini", 1, {BackendFeature::MoeFfn}},
                      ArchCase{"qwen2moe-a2.7b-mini", 1, {BackendFeature::MoeFfn}},
                      ArchCase{"deepseek2-lite-mini", 2, {BackendFeature::MoeFfn, BackendFeature::LatentAttention}},
                      ArchCase{"mamba2-mini", 1, {BackendFeature::StateSpace}},
                      ArchCase{"bge-small", 1, {BackendFeature::Encoder, BackendFeature::LayerNorm}},
                      ArchCase{"bloom-mini", 1, {BackendFeature::Alibi, BackendFeature::LayerNorm}},
                      ArchCase{"rwkv7-mini", 1, {BackendFeature::Rwkv7}}),
    [](const ::testing::TestParamInfo<ArchCase>& p) {
      std::string name = p.param.preset;
      std::erase_if(name, [](char ch) { return !std::isalnum(static_cast<unsigned char>(ch)); });
      return name;
    });

// RWKV 7 needs its own ops, not Mamba 2's: without them it is refused at load naming them, and a
// backend lacking only the state-space ops is not refused for them.
TEST(Rwkv7LoadRefusal, NeedsItsStateUpdateNotTheStateSpaceOps) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = synth("rwkv7-mini", DType::Q8_0, 1);
  LimitedBackend lacking(without({BackendFeature::Rwkv7}));
  const LoadResult r = load_on(lacking, path);
  EXPECT_NE(r.error.find("needs RWKV 7's layers (rwkv_wkv7 and the rwkv7_* element-wise ops), which the limited "
                         "backend does not run yet"),
            std::string::npos)
      << r.error;
  EXPECT_EQ(r.uploads, 0);
  LimitedBackend no_ssm(without({BackendFeature::StateSpace}));
  const LoadResult other = load_on(no_ssm, path);
  EXPECT_EQ(other.error.find(std::string(backend::backend_feature_name(BackendFeature::StateSpace))), std::string::npos)
      << other.error;
  std::filesystem::remove(path);
}

// Each weight type a file may hold: a backend without it refuses the file at load.
TEST(WeightTypeRefusal, EachTypeIsRefusedAtLoad) {
  LUMEN_REQUIRE_TESTDATA();
  for (DType type : {DType::F16, DType::BF16, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0,
                     DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
    const std::string path = synth("smollm2-135m", type, 1);
    LimitedSupport s = everything();
    s.weight_types.erase(type);
    LimitedBackend b(s);
    const LoadResult r = load_on(b, path);
    EXPECT_NE(r.error.find(std::string(tensor::dtype_name(type)) + " weights"), std::string::npos)
        << tensor::dtype_name(type) << ": " << r.error;
    EXPECT_EQ(r.uploads, 0);
    std::filesystem::remove(path);
  }
}

TEST(HeadWidthRefusal, LatentAttentionRowsWiderThanTheKernelsAreRefusedAtLoad) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = synth("deepseek2-lite-mini", DType::Q8_0, 2);
  LimitedSupport s = everything();
  s.max_head_dim = 256;  // the CUDA attention kernels' limit
  LimitedBackend b(s);
  const LoadResult r = load_on(b, path);
  EXPECT_NE(r.error.find("attention heads of 576 values (at most 256 here)"), std::string::npos) << r.error;
  EXPECT_EQ(r.uploads, 0);
  std::filesystem::remove(path);
}

// The engine's options: each is refused when the engine is built, before its cache exists.
class EngineOptionRefusal : public ::testing::Test {
 protected:
  void SetUp() override {
    LUMEN_REQUIRE_TESTDATA();
    path_ = synth("smollm2-135m", DType::Q8_0, 1);
  }
  void TearDown() override {
    if (!path_.empty()) std::filesystem::remove(path_);
  }
  // The engine's error on a backend that lacks `missing` ("" when it was built), and whether
  // the refusal came before any allocation.
  std::string refusal(const LimitedSupport& support, const EngineConfig& config, int64_t* allocations) {
    LimitedBackend b(support);
    engine::LoadedModel model = engine::LoadedModel::load(path_, b);
    OpCounter counter;
    b.add_observer(&counter);
    std::string error;
    try {
      Engine engine(engine::borrow_model(model, b), config);
    } catch (const Error& e) {
      error = e.what();
    }
    b.remove_observer(&counter);
    *allocations = counter.count(OpKind::Allocate);
    return error;
  }
  static EngineConfig small() {
    EngineConfig c;
    c.block_size = 16;
    c.kv_cache_bytes = 4 << 20;
    return c;
  }
  std::string path_;
};

TEST_F(EngineOptionRefusal, EachOptionTheBackendLacksIsRefusedBeforeTheCache) {
  struct Option {
    const char* what;
    BackendFeature feature;
    void (*set)(EngineConfig&);
  };
  const Option options[] = {
      {"token trees", BackendFeature::TreeAttention,
       [](EngineConfig& c) {
         c.speculative.method = SpeculativeMethod::Ngram;
         c.speculative.num_speculative_tokens = 3;
         c.speculative.num_candidates = 2;
       }},
      {"lookahead", BackendFeature::TreeAttention,
       [](EngineConfig& c) { c.speculative.method = SpeculativeMethod::Lookahead; }},
      {"context shift", BackendFeature::ShiftKeys,
       [](EngineConfig& c) { c.context_overflow = ContextOverflow::Shift; }},
      {"StreamingLLM window", BackendFeature::ShiftKeys, [](EngineConfig& c) { c.kv_window_tokens = 64; }},
      {"kv eviction", BackendFeature::KvEviction,
       [](EngineConfig& c) { c.kv_importance = parse_kv_importance("snapkv:budget=64"); }},
  };
  for (const Option& o : options) {
    EngineConfig config = small();
    o.set(config);
    int64_t allocations = -1;
    const std::string error = refusal(without({o.feature}), config, &allocations);
    EXPECT_NE(error.find("this engine's configuration needs " + std::string(backend::backend_feature_name(o.feature))),
              std::string::npos)
        << o.what << ": " << error;
    EXPECT_EQ(allocations, 0) << o.what;
  }
}

// A projector whose image positions attend both ways (Gemma 3's) on a backend without
// SequenceSlice::key_ends: refused when the engine is built, not inside a step.
class BothWaysEncoder final : public ImageEncoder {
 public:
  explicit BothWaysEncoder(int64_t width) : width_(width) {}
  int64_t embedding_length() const override { return width_; }
  EncodedImage encode(std::span<const uint8_t>) const override { fail("not used"); }
  std::string image_marker() const override { return "<|im_start|>"; }
  bool image_attends_both_ways() const override { return true; }

 private:
  int64_t width_;
};

TEST_F(EngineOptionRefusal, AProjectorWhoseImagesAttendBothWays) {
  LimitedBackend b(without({BackendFeature::SpanAttention}));
  engine::LoadedModel model = engine::LoadedModel::load(path_, b);
  Model handle = engine::borrow_model(model, b);
  handle.set_image_encoder(std::make_shared<BothWaysEncoder>(static_cast<int64_t>(model.hparams.embedding_length)));
  OpCounter counter;
  b.add_observer(&counter);
  try {
    Engine engine(handle, small());
    ADD_FAILURE() << "built";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "this model's projector needs attention both ways within each image's positions, which the limited "
              "backend does not run yet; use --device cpu");
  }
  b.remove_observer(&counter);
  EXPECT_EQ(counter.count(OpKind::Allocate), 0);
  // Where the backend has it, the same model builds.
  LimitedBackend full(everything());
  engine::LoadedModel again = engine::LoadedModel::load(path_, full);
  Model with = engine::borrow_model(again, full);
  with.set_image_encoder(std::make_shared<BothWaysEncoder>(static_cast<int64_t>(again.hparams.embedding_length)));
  EXPECT_NO_THROW(Engine(with, small()));
}

TEST_F(EngineOptionRefusal, ACompressedKvCacheNamesItsTypeAndRotation) {
  EngineConfig config = small();
  config.kv_cache_dtype = KvCacheDtype::Q8_0;
  LimitedSupport s = without({BackendFeature::RotatedKv});
  s.kv_types = {DType::F16, DType::F32};
  int64_t allocations = -1;
  EXPECT_EQ(refusal(s, config, &allocations),
            "this engine's configuration needs a rotated KV cache (rotate_heads) and a Q8_0 KV cache, which the "
            "limited backend does not run yet; use --device cpu");
  EXPECT_EQ(allocations, 0);
  config.kv_cache_rotation = false;  // --no-kv-cache-rotation: the type alone
  EXPECT_EQ(refusal(s, config, &allocations),
            "this engine's configuration needs a Q8_0 KV cache, which the limited backend does not run yet; use "
            "--device cpu");
}

}  // namespace
}  // namespace lumen::testing
