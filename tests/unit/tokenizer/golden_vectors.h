#pragma once
// Reads llama.cpp's test-tokenizer-0 vector files (../shared/testdata/tokenizer/README.md):
// NAME.gguf.inp holds the texts, each followed by "\n__ggml_vocab_test__\n"; NAME.gguf.out one
// line of space-separated expected ids per text.
#include <cstdint>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace lumen::tokenizer::testing {

struct GoldenCase {
  std::string text;
  std::vector<int32_t> ids;
};

inline std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::vector<GoldenCase> read_golden_cases(const std::string& gguf_path) {
  const std::string separator = "\n__ggml_vocab_test__\n";
  std::string inputs = read_whole_file(gguf_path + ".inp");
  std::vector<GoldenCase> cases;
  size_t pos = 0;
  while (pos < inputs.size()) {
    size_t end = inputs.find(separator, pos);
    if (end == std::string::npos) break;  // the empty tail after the last separator
    cases.push_back({inputs.substr(pos, end - pos), {}});
    pos = end + separator.size();
  }
  std::istringstream outputs(read_whole_file(gguf_path + ".out"));
  std::string line;
  for (GoldenCase& c : cases) {
    if (!std::getline(outputs, line)) throw std::runtime_error(gguf_path + ".out is short");
    std::istringstream ids(line);
    int32_t id = 0;
    while (ids >> id) c.ids.push_back(id);
  }
  return cases;
}

}  // namespace lumen::tokenizer::testing
