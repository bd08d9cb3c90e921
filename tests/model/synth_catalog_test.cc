// `lumen synth gemma3-270m --type Q4_K_M` stands in for the catalog's Gemma 3 270M Q4_K_M file
// where the file cannot go (a GPU machine takes 64 MiB a call; the file is 253 MB): the stand-in
// must hold the same tensors, of the same types and shapes, so that every kernel the real file
// runs is the one the stand-in runs. Only the weights' values differ (random), and the tokenizer.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "default_model_path.h"
#include "gguf/file.h"
#include "model/synth.h"

namespace lumen::testing {
namespace {

using Layout = std::map<std::string, std::tuple<tensor::DType, std::vector<int64_t>>>;

Layout layout_of(const std::string& path) {
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  Layout layout;
  for (const gguf::TensorInfo& t : file.tensors()) layout[t.name] = {t.type, t.dims};
  return layout;
}

TEST(SynthCatalog, Gemma3Q4KMStandInHasTheCatalogFilesTensors) {
  const std::string catalog = model_cache_dir() + "/gemma-3-270m-q4_k_m.gguf";
  ASSERT_TRUE(std::filesystem::exists(catalog)) << catalog << " is missing";
  const std::string stand_in = (std::filesystem::temp_directory_path() / "lumen_synth_gemma3_q4km.gguf").string();
  model::SynthOptions options;
  options.preset = "gemma3-270m";
  options.type = tensor::DType::Q4_K;
  options.q4_k_m = true;
  options.vocab_path = catalog;  // its tokenizer too: the stand-in differs in its weights only
  model::write_synthetic_model(options, stand_in);
  const Layout want = layout_of(catalog), got = layout_of(stand_in);
  std::remove(stand_in.c_str());
  EXPECT_EQ(want.size(), got.size());
  for (const auto& [name, type_and_dims] : want) {
    const auto it = got.find(name);
    if (it == got.end()) {
      ADD_FAILURE() << name << " is missing from the stand-in";
      continue;
    }
    EXPECT_EQ(tensor::dtype_name(std::get<0>(it->second)), tensor::dtype_name(std::get<0>(type_and_dims))) << name;
    EXPECT_EQ(std::get<1>(it->second), std::get<1>(type_and_dims)) << name;
  }
}

}  // namespace
}  // namespace lumen::testing
