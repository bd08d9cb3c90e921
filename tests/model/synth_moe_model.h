#pragma once
// A small mixture-of-experts model for the step tests, written with `lumen synth`'s code into a
// temporary file and removed with this object: qwen2moe-a2.7b-mini (routed experts beside a
// shared expert with its own gate) in Q4_1, 2 layers, on the shared test data's Llama vocabulary.
// Needs the shared test data: start the test with LUMEN_REQUIRE_TESTDATA().
#include <string>

#include "synth_model_file.h"

namespace lumen::testing {

inline model::SynthOptions synth_moe_options() {
  model::SynthOptions options;
  options.preset = "qwen2moe-a2.7b-mini";
  options.type = tensor::DType::Q4_1;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.seed = 3;
  options.block_count = 2;
  options.threads = 2;
  return options;
}

class SynthMoeModel : public SynthModelFile {
 public:
  SynthMoeModel() : SynthModelFile(synth_moe_options()) {}
};

}  // namespace lumen::testing
