#pragma once
// A small mixture-of-experts model for the step tests, written with `lumen synth`'s code into a
// temporary file and removed with this object: qwen2moe-a2.7b-mini (routed experts beside a
// shared expert with its own gate) in Q4_1, 2 layers, on the shared test data's Llama vocabulary.
// Needs the shared test data: start the test with LUMEN_REQUIRE_TESTDATA().
#include <unistd.h>

#include <filesystem>
#include <string>

#include "model/synth.h"

namespace lumen::testing {

class SynthMoeModel {
 public:
  SynthMoeModel() {
    path_ = (std::filesystem::temp_directory_path() / ("lumen_step_moe_" + std::to_string(::getpid()) + ".gguf"))
                .string();
    model::SynthOptions options;
    options.preset = "qwen2moe-a2.7b-mini";
    options.type = tensor::DType::Q4_1;
    options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
    options.seed = 3;
    options.block_count = 2;
    options.threads = 2;
    model::write_synthetic_model(options, path_);
  }
  ~SynthMoeModel() { std::filesystem::remove(path_); }
  SynthMoeModel(const SynthMoeModel&) = delete;
  SynthMoeModel& operator=(const SynthMoeModel&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace lumen::testing
