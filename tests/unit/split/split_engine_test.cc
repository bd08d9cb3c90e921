// The serving engine on a model split over two backends (model/backend_split.h): the same
// greedy tokens as the model on one backend, alone and batched, through prefix-cache hits and
// through preemption that swaps K/V blocks (both backends' parts of each page) to host memory
// and back. Two CPU backends stand in for the CPU and a GPU.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/model_state.h"
#include "lumen/engine.h"
#include "model/kv_cache.h"
#include "split_model.h"

namespace lumen::testing {
namespace {

class SplitEngine : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_testdata()) return;
    path_ = new std::string(write_split_model("smollm2-135m", 4));
    whole_backend_ = new backend::CpuBackend(2);
    whole_ = new engine::LoadedModel(engine::LoadedModel::load(*path_, *whole_backend_));
    first_ = new backend::CpuBackend(2);
    second_ = new backend::CpuBackend(2);
    engine::ModelPart part;
    part.split = [](const gguf::GgufFile&, const model::HParams&) { return model::BackendSplit{second_, 2}; };
    split_ = new engine::LoadedModel(engine::LoadedModel::load(*path_, *first_, part));
  }
  static void TearDownTestSuite() {
    delete split_;
    delete whole_;
    delete first_;
    delete second_;
    delete whole_backend_;
    if (path_ != nullptr) std::filesystem::remove(*path_);
    delete path_;
  }
  void SetUp() override { LUMEN_REQUIRE_TESTDATA(); }

  static Model whole() { return engine::borrow_model(*whole_, *whole_backend_); }
  static Model split() { return engine::borrow_model(*split_, *first_); }

  static EngineConfig config(int64_t blocks) {
    EngineConfig c;
    c.block_size = 4;
    c.num_kv_blocks = blocks;
    c.watermark = 0.0;
    return c;
  }
  static SamplingParams greedy(int64_t max_tokens) {
    SamplingParams p;
    p.temperature = 0.0f;
    p.max_tokens = max_tokens;
    p.ignore_eos = true;
    return p;
  }
  static std::vector<int32_t> prompt(int len, int salt) {
    std::vector<int32_t> p;
    for (int i = 0; i < len; ++i) p.push_back(300 + (salt * 97 + i * 31) % 20000);
    return p;
  }
  static void drain(Engine& engine) {
    while (engine.has_unfinished()) engine.step();
  }
  static std::vector<int32_t> alone(const Model& model, const std::vector<int32_t>& p, int64_t n) {
    Engine engine(model, config(128));
    RequestHandle h = engine.add_request(p, greedy(n));
    drain(engine);
    return h.collect().tokens;
  }

  static inline std::string* path_ = nullptr;
  static inline backend::CpuBackend* whole_backend_ = nullptr;
  static inline backend::CpuBackend* first_ = nullptr;
  static inline backend::CpuBackend* second_ = nullptr;
  static inline engine::LoadedModel* whole_ = nullptr;
  static inline engine::LoadedModel* split_ = nullptr;
};

TEST_F(SplitEngine, GreedyMatchesOneBackendAloneAndBatched) {
  const std::vector<int32_t> expected = alone(whole(), prompt(9, 1), 12);
  ASSERT_EQ(expected.size(), 12u);
  EXPECT_EQ(alone(split(), prompt(9, 1), 12), expected);

  Engine batched(split(), config(128));
  std::vector<RequestHandle> others;
  for (int s = 0; s < 4; ++s) others.push_back(batched.add_request(prompt(5 + 3 * s, 10 + s), greedy(8 + s)));
  RequestHandle same = batched.add_request(prompt(9, 1), greedy(12));
  drain(batched);
  EXPECT_EQ(same.collect().tokens, expected);
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(others[static_cast<size_t>(s)].collect().tokens, alone(whole(), prompt(5 + 3 * s, 10 + s), 8 + s));
  }
}

TEST_F(SplitEngine, PrefixCacheHitsGiveOneBackendsTokens) {
  std::vector<int32_t> shared = prompt(16, 3);
  std::vector<int32_t> second = shared;
  for (int32_t t : prompt(5, 4)) second.push_back(t);
  const std::vector<int32_t> expected = alone(whole(), second, 10);

  Engine engine(split(), config(128));
  RequestHandle first = engine.add_request(shared, greedy(4));
  drain(engine);
  first.collect();
  RequestHandle again = engine.add_request(second, greedy(10));
  drain(engine);
  EXPECT_EQ(again.collect().tokens, expected);
  EXPECT_GT(engine.stats().prefix_hit_blocks, 0u) << "the second prompt did not reuse the first's blocks";
}

TEST_F(SplitEngine, SwappedBlocksComeBackFromBothBackends) {
  // Too few blocks for all four at once: some are preempted and their K/V (each page's part on
  // either backend) swapped to host memory and back.
  EngineConfig c = config(24);
  c.preemption_mode = PreemptionMode::Swap;
  c.swap_space_bytes = int64_t{64} << 20;
  Engine engine(split(), c);
  std::vector<RequestHandle> hs;
  for (int s = 0; s < 4; ++s) hs.push_back(engine.add_request(prompt(10, 20 + s), greedy(16)));
  drain(engine);
  EXPECT_GT(engine.stats().preemptions, 0u) << "nothing was preempted: the test proves nothing";
  for (int s = 0; s < 4; ++s) {
    EXPECT_EQ(hs[static_cast<size_t>(s)].collect().tokens, alone(whole(), prompt(10, 20 + s), 16));
  }
}

// A split cache's page is the unsplit one cut in two: the same host bytes per block, written and
// read back whole.
TEST_F(SplitEngine, CacheBlocksRoundTripThroughHostMemory) {
  const model::HParams& hp = split_->transformer->hparams();
  const kv::KvLayout layout = split_->transformer->kv_layout(true);
  model::KvCache one(*whole_backend_, hp, layout, 4, 4);
  model::KvCache two(*first_, hp, layout, 4, 4, tensor::DType::F16, true, split_->transformer->split());
  ASSERT_EQ(two.block_host_bytes(), one.block_host_bytes());
  std::vector<uint8_t> page(two.block_host_bytes()), back(page.size());
  for (size_t i = 0; i < page.size(); ++i) page[i] = static_cast<uint8_t>((i * 7) % 61);  // finite f16 values
  two.write_block(2, page.data());
  two.read_block(2, back.data());
  EXPECT_EQ(back, page);
  two.copy_block(2, 3);
  two.read_block(3, back.data());
  EXPECT_EQ(back, page);
  EXPECT_EQ(two.bytes(), one.bytes());
}

}  // namespace
}  // namespace lumen::testing
