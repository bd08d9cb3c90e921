#pragma once
// One greedy sequence decoding on a tiny synthetic llama, each step a Transformer::forward over its
// own K/V cache: the decode steps the CUDA step-graph tests record, replay and count
// (step_graph_owners_test.cc, sim_step_ledger_test.cc).
#include <algorithm>
#include <filesystem>
#include <numeric>
#include <span>
#include <string>
#include <vector>

#include "default_model_path.h"
#include "lumen_testdata.h"
#include "engine/loaded_model.h"
#include "model/kv_cache.h"
#include "model/synth.h"

namespace lumen::testing {

// The vocabulary the test models take: the shared test data's Llama one (32 000 tokens) where it
// is at hand, else the default model's (a GPU machine has that, carried by gpu_check.sh).
inline std::string tiny_llama_vocabulary() {
  const std::string llama = testdata_dir() + "/tokenizer/ggml-vocab-llama-spm.gguf";
  return std::filesystem::exists(llama) ? llama : default_model_path();
}

// A 2-layer llama in the shapes of `lumen synth llama3-mini` (256 wide, 64-dim heads), Q4_0.
inline model::SynthOptions tiny_llama(uint64_t seed) {
  model::SynthOptions options;
  options.preset = "llama3-mini";
  options.type = tensor::DType::Q4_0;
  options.vocab_path = tiny_llama_vocabulary();
  options.seed = seed;
  options.block_count = 2;
  options.threads = 2;
  return options;
}

// A prompt prefilled at construction, then greedy decode steps of one token.
class TinyDecodeSequence {
 public:
  static constexpr int64_t kBlock = 16;
  static constexpr int64_t kBlocks = 4;

  TinyDecodeSequence(engine::LoadedModel& model, backend::Backend& backend, int32_t first_token, int64_t prompt_length)
      : model_(model), cache_(backend, model.hparams, kBlocks, kBlock), table_(kBlocks) {
    std::iota(table_.begin(), table_.end(), 0);
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_length)), positions(prompt.size());
    for (size_t i = 0; i < prompt.size(); ++i) prompt[i] = first_token + static_cast<int32_t>(37 * i % 3000);
    std::iota(positions.begin(), positions.end(), 0);
    forward(prompt, positions);
  }

  // The step's logits.
  const std::vector<float>& step() {
    const std::vector<int32_t> token = {next_}, position = {position_};
    forward(token, position);
    return logits_;
  }

 private:
  void forward(const std::vector<int32_t>& tokens, const std::vector<int32_t>& positions) {
    const backend::SequenceSlice slice{0, static_cast<int64_t>(tokens.size()), position_, table_};
    const int32_t last = static_cast<int32_t>(tokens.size() - 1);
    logits_.assign(static_cast<size_t>(model_.hparams.vocab_size), 0.0f);
    model_.transformer->forward({tokens, positions, std::span(&slice, 1), std::span(&last, 1)}, cache_, logits_.data());
    next_ = static_cast<int32_t>(std::max_element(logits_.begin(), logits_.end()) - logits_.begin());
    position_ += static_cast<int32_t>(tokens.size());
  }

  engine::LoadedModel& model_;
  model::KvCache cache_;
  std::vector<int32_t> table_;
  std::vector<float> logits_;
  int32_t next_ = 0;
  int32_t position_ = 0;
};

}  // namespace lumen::testing
