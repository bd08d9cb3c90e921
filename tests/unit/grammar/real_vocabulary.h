#pragma once
// A real model vocabulary for the grammar tests: SmolLM2-135M's (the default model, in
// $LUMEN_CACHE or ~/.cache/lumen/models) when it is there, else StarCoder's from the shared
// test data (same size, 49,152 tokens, also a byte-level BPE vocabulary).
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "gguf/file.h"
#include "grammar/token_vocabulary.h"
#include "tokenizer/tokenizer.h"

namespace lumen::grammar::testing {

inline std::string smollm2_path() {
  const char* cache = std::getenv("LUMEN_CACHE");
  std::string dir = cache != nullptr && *cache != '\0' ? cache : std::string(std::getenv("HOME")) + "/.cache/lumen/models";
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

inline std::string real_vocabulary_path() {
  std::string model = smollm2_path();
  if (std::filesystem::exists(model)) return model;
  return std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-starcoder.gguf";
}

// Special (control) tokens are unusable; EOS/EOT end generation.
inline std::shared_ptr<const TokenVocabulary> load_real_vocabulary() {
  static std::shared_ptr<const TokenVocabulary> cached = [] {
    auto tokenizer = tokenizer::Tokenizer::from_gguf(gguf::GgufFile::open(real_vocabulary_path()));
    const auto& vocab = tokenizer.vocab();
    std::vector<std::string> bytes(vocab.size());
    std::vector<bool> unusable(vocab.size());
    for (size_t id = 0; id < vocab.size(); ++id) {
      bytes[id] = tokenizer.token_bytes(static_cast<int32_t>(id));
      unusable[id] = tokenizer.is_special(static_cast<int32_t>(id));
    }
    std::vector<int32_t> eog;
    if (vocab.special.eos) eog.push_back(*vocab.special.eos);
    if (vocab.special.eot && vocab.special.eot != vocab.special.eos) eog.push_back(*vocab.special.eot);
    return std::make_shared<const TokenVocabulary>(std::move(bytes), std::move(unusable), std::move(eog));
  }();
  return cached;
}

inline std::string read_grammar_file(const std::string& name) {
  std::string path = std::string(LUMEN_TESTDATA_DIR) + "/grammars/" + name;
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace lumen::grammar::testing
