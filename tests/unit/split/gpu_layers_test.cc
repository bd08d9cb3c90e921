// --n-gpu-layers (model/gpu_layers.h, engine/gpu_layers_split.h, cli/gpu_layers_flag.h): llama.cpp's
// count of layers and output head as a split, the automatic choice from free device memory on
// made-up numbers, and the refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cli/gpu_layers_flag.h"
#include "cli/llama_cpp_spellings.h"
#include "engine/gpu_layers_split.h"
#include "gguf/file.h"
#include "model/gpu_layers.h"
#include "split_model.h"
#include "util/error.h"

namespace lumen::testing {
namespace {

TEST(GpuLayers, CountsTheOutputHeadAsTheFirstUnitAsLlamaCppDoes) {
  // 30 layers: N = 1 is the head alone (the GPU starts after the last layer), N = 31 all.
  EXPECT_EQ(model::first_gpu_layer(30, 1), 30u);
  EXPECT_EQ(model::first_gpu_layer(30, 2), 29u);
  EXPECT_EQ(model::first_gpu_layer(30, 16), 15u);
  EXPECT_EQ(model::first_gpu_layer(30, 30), 1u);
  EXPECT_EQ(model::first_gpu_layer(30, 31), 0u);
  EXPECT_THROW(model::first_gpu_layer(30, 32), Error);
  EXPECT_THROW(model::first_gpu_layer(30, 0), Error);  // none on the GPU is no split
  try {
    model::first_gpu_layer(30, 99);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("0 to 31"), std::string::npos) << e.what();
  }
}

model::GpuLayerBytes four_layers() {
  model::GpuLayerBytes bytes;
  bytes.layer_weights = {100, 100, 100, 100};
  bytes.output_weights = 300;
  bytes.kv_per_layer = 50;
  return bytes;
}

TEST(GpuLayers, AutoTakesUnitsFromTheOutputHeadBackWhileTheyFit) {
  const model::GpuLayerBytes bytes = four_layers();
  // Reserve 200 first; the head takes 300, each layer 150 with its K/V.
  EXPECT_EQ(model::auto_gpu_layers(100, 200, bytes), 0);  // not even the reserve
  EXPECT_EQ(model::auto_gpu_layers(499, 200, bytes), 0);  // the head does not fit
  EXPECT_EQ(model::auto_gpu_layers(500, 200, bytes), 1);  // the head alone
  EXPECT_EQ(model::auto_gpu_layers(649, 200, bytes), 1);
  EXPECT_EQ(model::auto_gpu_layers(650, 200, bytes), 2);
  EXPECT_EQ(model::auto_gpu_layers(950, 200, bytes), 4);
  EXPECT_EQ(model::auto_gpu_layers(1100, 200, bytes), 5);  // everything: 4 layers + head
  EXPECT_EQ(model::auto_gpu_layers(uint64_t{1} << 40, 200, bytes), 5);
}

TEST(GpuLayers, AutoStopsAtTheFirstLayerThatDoesNotFit) {
  model::GpuLayerBytes bytes = four_layers();
  bytes.layer_weights = {10, 10, 1000, 10};  // layer 2 is huge: layers 0 and 1 cannot skip past it
  EXPECT_EQ(model::auto_gpu_layers(10000, 0, bytes), 5);
  EXPECT_EQ(model::auto_gpu_layers(300 + 60 + 1000, 0, bytes), 2);  // head and layer 3 only
}

TEST(GpuLayers, MoreContextLeavesRoomForFewerLayers) {
  model::GpuLayerBytes bytes = four_layers();
  bytes.kv_per_layer = 0;
  EXPECT_EQ(model::auto_gpu_layers(800, 0, bytes), 5);
  bytes.kv_per_layer = 400;  // 300 for the head leaves 500: one layer and its K/V
  EXPECT_EQ(model::auto_gpu_layers(800, 0, bytes), 2);
  bytes.kv_per_layer = 401;
  EXPECT_EQ(model::auto_gpu_layers(800, 0, bytes), 1);
}

TEST(GpuLayers, BytesComeFromTheFilesTensors) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string path = write_split_model("smollm2-135m", 3);
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  const model::HParams hp = model::read_hparams(file);
  const model::GpuLayerBytes bytes = model::gpu_layer_bytes(file, hp, 1000, tensor::DType::F16);
  uint64_t layers = 0;
  ASSERT_EQ(bytes.layer_weights.size(), 3u);
  for (uint64_t b : bytes.layer_weights) {
    EXPECT_GT(b, 0u);
    layers += b;
  }
  uint64_t everything = 0, embedding = 0;
  for (const gguf::TensorInfo& info : file.tensors()) {
    everything += info.bytes;
    if (info.name == "token_embd.weight") embedding = info.bytes;
  }
  // smollm2 ties its output to the embedding table: the head's bytes are that table and the norm.
  EXPECT_EQ(layers + bytes.output_weights, everything);
  EXPECT_GT(bytes.output_weights, embedding);
  // K and V in f16: 2 x kv heads x head dim x 2 bytes per position.
  EXPECT_EQ(bytes.kv_per_layer, 1000u * 2 * hp.head_count_kv * hp.head_dim * 2);
  std::filesystem::remove(path);
}

TEST(GpuLayersFlag, ParsesCountsAutoAndAll) {
  EXPECT_EQ(cli::gpu_layers_value(""), kAllGpuLayers);
  EXPECT_EQ(cli::gpu_layers_value("all"), kAllGpuLayers);
  EXPECT_EQ(cli::gpu_layers_value("auto"), kAutoGpuLayers);
  EXPECT_EQ(cli::gpu_layers_value("0"), 0);
  EXPECT_EQ(cli::gpu_layers_value("17"), 17);
  EXPECT_THROW(cli::gpu_layers_value("-1"), Error);
  EXPECT_THROW(cli::gpu_layers_value("12x"), Error);
  EXPECT_THROW(cli::gpu_layers_value("many"), Error);
}

TEST(GpuLayersFlag, AutoIsSizedForTheEnginesContextAndMemoryShare) {
  EngineConfig config;
  config.max_model_len = 2048;
  config.gpu_memory_utilization = 0.7;
  const ModelOptions options = cli::sized_for({.device = "cuda"}, config);
  EXPECT_EQ(options.gpu_layers_context, 2048);
  EXPECT_DOUBLE_EQ(options.gpu_layers_memory_fraction, 0.7);
  EXPECT_EQ(options.device, "cuda");
}

TEST(GpuLayersFlag, SpellsLlamaCppsNgl) {
  std::vector<std::string> in = {"lumen", "run", "-ngl", "12", "-ngl=auto", "-n", "5"};
  std::vector<char*> argv;
  for (std::string& a : in) argv.push_back(a.data());
  const std::vector<std::string> out = cli::with_llama_cpp_spellings(static_cast<int>(argv.size()), argv.data());
  EXPECT_EQ(out, (std::vector<std::string>{"lumen", "run", "--n-gpu-layers", "12", "--n-gpu-layers=auto", "-n", "5"}));
}

TEST(GpuLayersOption, RefusedOnTheCpuDeviceAndWithModelParallelism) {
  ModelOptions options;
  options.device = "cpu";
  EXPECT_NO_THROW(engine::check_gpu_layers_option(options));  // unset
  options.n_gpu_layers = 4;
  EXPECT_THROW(engine::check_gpu_layers_option(options), Error);
  options.n_gpu_layers = kAutoGpuLayers;
  EXPECT_THROW(engine::check_gpu_layers_option(options), Error);
  options.device = "cuda";
  EXPECT_NO_THROW(engine::check_gpu_layers_option(options));
  options.n_gpu_layers = -3;
  EXPECT_THROW(engine::check_gpu_layers_option(options), Error);
  options.n_gpu_layers = 4;
  options.pipeline_parallel_size = 2;
  EXPECT_THROW(engine::check_gpu_layers_option(options), Error);
}

TEST(GpuLayersOption, ModelLoadRefusesLayersForTheCpuBeforeReadingTheFile) {
  ModelOptions options;
  options.device = "cpu";
  options.n_gpu_layers = 3;
  try {
    Model::load("/nonexistent/model.gguf", options);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--device cpu"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace lumen::testing
