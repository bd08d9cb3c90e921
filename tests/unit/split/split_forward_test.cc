// A forward pass split over two backends (model/backend_split.h) against the same model on
// one: prefill of two sequences, then a decode step of both, at splits 0 (every layer on the
// second backend, the embedding on the first), 1, the middle and every layer (the output head
// alone on the second). The logits must be the one backend's, bit for bit: both backends are
// CPU backends of the same threads, so any difference is the split's (a row copied wrong, a
// layer run twice or on the wrong K/V).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <memory>
#include <numeric>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "gguf/file.h"
#include "model/kv_cache.h"
#include "model/transformer.h"
#include "split_model.h"
#include "../../model/default_model_path.h"

namespace lumen::testing {
namespace {

constexpr int64_t kBlockSize = 16;
constexpr int64_t kBlocksPerSequence = 4;

// Every step's logits, concatenated: a prefill of two prompts (23 and 9 tokens) in one batch,
// then one decode token for each. Each group of the layout gets its own blocks.
std::vector<float> run_steps(model::Transformer& transformer, model::KvCache& cache) {
  const model::HParams& hp = transformer.hparams();
  const size_t n_groups = cache.layout().n_groups();
  const std::vector<int64_t> lengths = {23, 9};
  std::vector<std::vector<int32_t>> tables;
  for (size_t g = 0; g < n_groups; ++g) {
    for (size_t s = 0; s < lengths.size(); ++s) {
      std::vector<int32_t> table(kBlocksPerSequence);
      std::iota(table.begin(), table.end(), static_cast<int32_t>((g * lengths.size() + s) * kBlocksPerSequence));
      tables.push_back(table);
    }
  }
  std::vector<float> all;
  for (int step = 0; step < 2; ++step) {
    std::vector<int32_t> tokens, positions, logit_rows;
    std::vector<backend::SequenceSlice> slices;
    for (size_t s = 0; s < lengths.size(); ++s) {
      const int64_t start = step == 0 ? 0 : lengths[s];
      const int64_t count = step == 0 ? lengths[s] : 1;
      const auto first = static_cast<int64_t>(tokens.size());
      for (int64_t i = 0; i < count; ++i) {
        tokens.push_back(static_cast<int32_t>((37 * (start + i) + 101 * static_cast<int64_t>(s) + 5) %
                                              static_cast<int64_t>(hp.vocab_size)));
        positions.push_back(static_cast<int32_t>(start + i));
      }
      logit_rows.push_back(static_cast<int32_t>(tokens.size() - 1));
      slices.push_back({first, count, start, {}});
    }
    std::vector<backend::SequenceSlice> sequences;
    for (size_t g = 0; g < n_groups; ++g) {
      for (size_t s = 0; s < slices.size(); ++s) {
        backend::SequenceSlice slice = slices[s];
        slice.block_table = tables[g * slices.size() + s];
        sequences.push_back(slice);
      }
    }
    model::ForwardBatch batch;
    batch.tokens = tokens;
    batch.positions = positions;
    batch.sequences = sequences;
    batch.logit_rows = logit_rows;
    std::vector<float> logits(logit_rows.size() * hp.vocab_size);
    transformer.forward(batch, cache, logits.data());
    all.insert(all.end(), logits.begin(), logits.end());
  }
  return all;
}

struct Outcome {
  std::vector<float> logits;
  // A one-group cache's every block after a context shift of 3 positions, as read_block gives
  // them (layer by layer: the same order split or not); empty for a layout of several groups.
  std::vector<uint8_t> shifted_kv;
  std::vector<uint64_t> expert_tokens;                // a mixture of experts' routing counts, every layer
  int64_t first_attention = 0, second_attention = 0;  // attention calls each backend ran
  int64_t foreign_kv = 0;
};

// The model at `path` (its hyperparameters edited by `edit`) on one backend (split < 0) or split
// at `split`.
template <typename Edit>
Outcome run_model(const std::string& path, int64_t split, Edit edit) {
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  model::HParams hp = model::read_hparams(file);
  edit(hp);
  backend::CpuBackend first(2), second(2);
  PlacementObserver first_seen, second_seen;
  first.add_observer(&first_seen);
  second.add_observer(&second_seen);
  model::BackendSplit how;
  if (split >= 0) how = {&second, static_cast<uint64_t>(split)};
  model::Transformer transformer(first, file, hp, {}, {}, {}, {}, how);
  const kv::KvLayout layout = transformer.kv_layout(true);
  const auto n_blocks = static_cast<int64_t>(layout.n_groups()) * 2 * kBlocksPerSequence;
  model::KvCache cache(first, transformer.hparams(), layout, n_blocks, kBlockSize, tensor::DType::F16, true,
                       transformer.split());
  for (int64_t b = 0; b < n_blocks; ++b) cache.zero_block(b);  // slots no token writes compare too
  Outcome out;
  out.logits = run_steps(transformer, cache);
  if (layout.n_groups() == 1) {
    std::vector<int32_t> blocks(static_cast<size_t>(n_blocks));
    std::iota(blocks.begin(), blocks.end(), 0);
    transformer.shift_keys(cache, blocks, 3);
    out.shifted_kv.resize(static_cast<size_t>(n_blocks) * cache.block_host_bytes());
    for (int64_t b = 0; b < n_blocks; ++b) cache.read_block(b, out.shifted_kv.data() + b * cache.block_host_bytes());
  }
  if (const model::ExpertLoad* load = transformer.expert_load()) out.expert_tokens = load->tokens;
  out.first_attention = first_seen.attention_calls;
  out.second_attention = second_seen.attention_calls;
  out.foreign_kv = first_seen.foreign_kv + second_seen.foreign_kv;
  return out;
}

template <typename Edit>
void expect_splits_match(const std::string& path, std::vector<int64_t> splits, Edit edit) {
  const Outcome whole = run_model(path, -1, edit);
  const int64_t layers = whole.first_attention / 2;  // two steps
  ASSERT_GT(layers, 0);
  EXPECT_EQ(whole.second_attention, 0);
  for (int64_t split : splits) {
    SCOPED_TRACE("split at layer " + std::to_string(split));
    const Outcome part = run_model(path, split, edit);
    ASSERT_EQ(part.logits.size(), whole.logits.size());
    EXPECT_EQ(std::memcmp(part.logits.data(), whole.logits.data(), whole.logits.size() * sizeof(float)), 0)
        << "the split's logits differ from one backend's";
    EXPECT_TRUE(part.shifted_kv == whole.shifted_kv) << "the K/V (context-shifted) differ from one backend's";
    EXPECT_EQ(part.expert_tokens, whole.expert_tokens);
    // Each backend ran the attention of its own layers, on K/V in its own memory.
    EXPECT_EQ(part.first_attention, 2 * split);
    EXPECT_EQ(part.second_attention, 2 * (layers - split));
    EXPECT_EQ(part.foreign_kv, 0);
  }
}

void no_edit(model::HParams&) {}

TEST(SplitForward, SyntheticLlamaMatchesOneBackendAtEverySplit) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = write_split_model("smollm2-135m", 4);
  expect_splits_match(path, {0, 1, 2, 4}, no_edit);
  std::filesystem::remove(path);
}

// Gemma 3: sliding-window layers (a window of 8 here, so the prompts outrun it) grouped apart
// from the global ones in the KV layout, each group's pages split between the backends.
TEST(SplitForward, SyntheticGemma3WithSlidingWindowsMatchesOneBackend) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = write_split_model("gemma3-270m", 6);
  expect_splits_match(path, {0, 1, 3, 5, 6}, [](model::HParams& hp) { hp.sliding_window = 8; });
  std::filesystem::remove(path);
}

// A mixture of experts: each backend's part routes its own layers' tokens.
TEST(SplitForward, SyntheticMixtureOfExpertsMatchesOneBackend) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = write_split_model("qwen3moe-mini", 4);
  expect_splits_match(path, {0, 1, 2, 4}, no_edit);
  std::filesystem::remove(path);
}

// The real default model (SmolLM2-135M, 30 layers), where it has been fetched.
TEST(SplitForward, SmolLM2MatchesOneBackendAtEverySplit) {
  const std::string path = default_model_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no default model at " << path;
  expect_splits_match(path, {0, 1, 15, 30}, no_edit);
}

// Embeddings (forward_hidden): the final hidden rows come from the second backend's part.
TEST(SplitForward, HiddenStatesMatchOneBackend) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = write_split_model("smollm2-135m", 3);
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const model::HParams hp = model::read_hparams(file);
  std::vector<std::vector<float>> hidden;
  for (int64_t split : {-1, 0, 2, 3}) {
    backend::CpuBackend first(2), second(2);
    model::BackendSplit how;
    if (split >= 0) how = {&second, static_cast<uint64_t>(split)};
    model::Transformer transformer(first, file, hp, {}, {}, {}, {}, how);
    model::KvCache cache(first, hp, transformer.kv_layout(false), 2, kBlockSize, tensor::DType::F16, true,
                         transformer.split());
    const std::vector<int32_t> tokens = {5, 900, 17, 42, 7}, positions = {0, 1, 2, 3, 4}, rows = {2, 4};
    const std::vector<int32_t> table = {0, 1};
    const std::vector<backend::SequenceSlice> sequences = {{0, 5, 0, table}};
    model::ForwardBatch batch;
    batch.tokens = tokens;
    batch.positions = positions;
    batch.sequences = sequences;
    batch.logit_rows = rows;
    hidden.emplace_back(rows.size() * hp.embedding_length);
    transformer.forward_hidden(batch, cache, hidden.back().data());
  }
  for (size_t i = 1; i < hidden.size(); ++i) EXPECT_EQ(hidden[i], hidden[0]) << "split " << i;
  std::filesystem::remove(path);
}

TEST(SplitForward, RefusesASplitBeyondTheLayers) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = write_split_model("smollm2-135m", 2);
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const model::HParams hp = model::read_hparams(file);
  backend::CpuBackend first(1), second(1);
  EXPECT_THROW(model::Transformer(first, file, hp, {}, {}, {}, {}, {&second, 3}), Error);
  model::Transformer transformer(first, file, hp, {}, {}, {}, {}, {&second, 1});
  // A layer-skip draft would take layers from both backends' parts.
  EXPECT_THROW(model::Transformer(transformer, 1), Error);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lumen::testing
