// `lumen prune` on a synthetic model: the kept layers' tensors, byte for byte and renumbered,
// the block count and per-layer arrays cut, and the output loads as a model; the layer list's
// syntax and its refusals.
#include "prune/prune_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "backend/cpu/cpu_backend.h"
#include "gguf/file.h"
#include "gguf/writer.h"
#include "lumen/error.h"
#include "lumen_testdata.h"
#include "model/hparams.h"
#include "model/synth.h"
#include "model/transformer.h"
#include "prune/layer_list.h"

namespace lumen::prune {
namespace {

std::string temp(const std::string& what) {
  return (std::filesystem::temp_directory_path() / ("lumen_prune_" + what + "_" + std::to_string(::getpid()) + ".gguf"))
      .string();
}

bool same_bytes(const gguf::TensorInfo& a, const gguf::TensorInfo& b) {
  return a.type == b.type && a.dims == b.dims && std::equal(a.data, a.data + a.bytes, b.data, b.data + b.bytes);
}

TEST(PruneModel, KeepsTheListedLayersRenumberedAndLoads) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string in = temp("in"), out = temp("out");
  model::SynthOptions options;
  options.preset = "smollm2-135m";
  options.type = tensor::DType::Q8_0;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.block_count = 3;
  options.threads = 2;
  model::write_synthetic_model(options, in);
  {
    // A per-layer array (as OpenELM's per-layer head counts), to be cut with the layers.
    gguf::GgufFile synth = gguf::GgufFile::open(in);
    gguf::GgufWriter w(synth.alignment());
    w.metadata() = synth.metadata();
    const std::vector<int32_t> per_layer = {10, 11, 12};
    w.metadata().set("llama.test_per_layer", gguf::Value::i32_array(per_layer));
    for (const gguf::TensorInfo& t : synth.tensors()) w.add_tensor(t.name, t.type, t.dims, t.span());
    w.write(in);
  }
  const PruneReport report = prune_model(in, out, parse_layer_list("0,2"));
  EXPECT_EQ(report.layers_in, 3u);
  EXPECT_EQ(report.layers_out, 2u);
  EXPECT_EQ(report.per_layer_keys, std::vector<std::string>{"llama.test_per_layer"});
  const gguf::GgufFile a = gguf::GgufFile::open(in), b = gguf::GgufFile::open(out);
  EXPECT_EQ(b.metadata().get_unsigned("llama.block_count"), 2u);
  const gguf::Array& cut = b.metadata().get_array("llama.test_per_layer", gguf::ValueType::I32);
  ASSERT_EQ(cut.length, 2u);
  int32_t values[2];
  std::memcpy(values, cut.raw.data(), sizeof(values));
  EXPECT_EQ(values[0], 10);
  EXPECT_EQ(values[1], 12);
  EXPECT_EQ(b.tensors().size(), report.tensors_out);
  for (const gguf::TensorInfo& t : b.tensors()) {
    std::string source = t.name;
    if (source.starts_with("blk.1.")) source = "blk.2." + source.substr(6);
    ASSERT_NE(a.find_tensor(source), nullptr) << t.name;
    EXPECT_TRUE(same_bytes(t, *a.find_tensor(source))) << t.name;
  }
  EXPECT_EQ(b.find_tensor("blk.2.attn_q.weight"), nullptr);
  backend::CpuBackend backend(1);
  const model::HParams hp = model::read_hparams(b);
  EXPECT_NO_THROW(model::Transformer(backend, b, hp));
  std::filesystem::remove(in);
  std::filesystem::remove(out);
}

TEST(PruneModel, BadChoicesAreRefusedAndLeaveNoFile) {
  LUMEN_REQUIRE_TESTDATA();
  const std::string in = temp("in2"), out = temp("out2");
  model::SynthOptions options;
  options.preset = "smollm2-135m";
  options.type = tensor::DType::Q8_0;
  options.vocab_path = std::string(LUMEN_TESTDATA_DIR) + "/tokenizer/ggml-vocab-llama-spm.gguf";
  options.block_count = 2;
  options.threads = 2;
  model::write_synthetic_model(options, in);
  EXPECT_THROW(prune_model(in, out, {2}), Error);
  EXPECT_THROW(prune_model(in, out, {}), Error);
  EXPECT_THROW(prune_model(in, out, {1, 0}), Error);
  EXPECT_FALSE(std::filesystem::exists(out));
  std::filesystem::remove(in);
}

TEST(LayerList, RangesAndSingleLayersInOrder) {
  EXPECT_EQ(parse_layer_list("0-3,7,12"), (std::vector<uint64_t>{0, 1, 2, 3, 7, 12}));
  EXPECT_EQ(parse_layer_list("5"), (std::vector<uint64_t>{5}));
  EXPECT_EQ(first_layers(3), (std::vector<uint64_t>{0, 1, 2}));
  for (const char* bad : {"", "1,", "a", "3-1", "1,1", "2,1", "1-2-3", "-1"}) {
    EXPECT_THROW(parse_layer_list(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace lumen::prune
