#pragma once
// The vision tests' files: the tiny mmproj files scripts/vlm_tiny_mmproj.py writes into the
// build tree (the ctest fixture vision_tiny_mmproj_files), their goldens, and copies of them
// with one thing changed, written with Lumen's own GGUF writer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "util/error.h"

namespace lumen::testing {

inline std::string tiny_mmproj_path(const std::string& name) {
  return std::string(LUMEN_GENERATED_DIR) + "/vlm-" + name + ".mmproj.gguf";
}

inline nlohmann::json vision_golden(const std::string& name) {
  std::ifstream in(std::string(LUMEN_GOLDEN_DIR) + "/vision/" + name + ".json");
  return nlohmann::json::parse(in);
}

// What a rewrite may change: the keys, and each tensor (return false to drop it).
using TensorEdit = std::function<bool(const gguf::TensorInfo&, tensor::DType& type, std::vector<int64_t>& dims,
                                      std::vector<uint8_t>& bytes)>;
struct GgufEdit {
  std::function<void(gguf::Metadata&)> keys;
  TensorEdit tensor;
};
inline GgufEdit edit_tensors(TensorEdit edit) { return {nullptr, std::move(edit)}; }

// A copy of `src` with `edit` applied, written to `dst`.
inline void rewrite_gguf(const std::string& src, const std::string& dst, const GgufEdit& edit) {
  const gguf::GgufFile in = gguf::GgufFile::open(src);
  gguf::GgufWriter out;
  for (const auto& [key, value] : in.metadata().entries()) {
    if (key != "general.alignment") out.metadata().set(key, value);
  }
  if (edit.keys) edit.keys(out.metadata());
  for (const gguf::TensorInfo& t : in.tensors()) {
    tensor::DType type = t.type;
    std::vector<int64_t> dims = t.dims;
    std::vector<uint8_t> bytes(t.data, t.data + t.bytes);
    if (edit.tensor && !edit.tensor(t, type, dims, bytes)) continue;
    out.add_tensor(t.name, type, dims, bytes);
  }
  out.write(dst);
}

}  // namespace lumen::testing

// The tiny files come from the ctest fixture; run alone, the binary says how to make them.
#define LUMEN_REQUIRE_TINY_MMPROJ(name)                                              \
  if (!std::filesystem::exists(::lumen::testing::tiny_mmproj_path(name)))            \
  GTEST_SKIP() << ::lumen::testing::tiny_mmproj_path(name)                           \
               << " is missing: run scripts/vlm_tiny_mmproj.py " LUMEN_GENERATED_DIR \
                  " (ctest runs it as the "                                          \
                  "fixture vision_tiny_mmproj_files)"
