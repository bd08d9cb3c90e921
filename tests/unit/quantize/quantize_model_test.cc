// `lumen quantize` end to end on a small model written here: the planned types land in the
// file, each converted tensor holds exactly quantize_row_ggml's bytes for its rows (computed
// independently here, so the thread split cannot change them), copied tensors are untouched,
// the metadata is the input's plus the file type, and every refusal leaves no file behind.
#include <gtest/gtest.h>

#include <cstring>
#include <unistd.h>

#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quantize/quantize_model.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

using tensor::DType;
namespace fs = std::filesystem;

constexpr int64_t kWidth = 256;
constexpr int64_t kVocab = 96;

std::vector<float> values(int64_t n, float scale, uint32_t seed) {
  std::vector<float> out(static_cast<size_t>(n));
  uint32_t state = seed;
  for (float& v : out) {
    state = state * 1664525u + 1013904223u;
    v = scale * (static_cast<float>(state >> 8) / 16777216.0f - 0.5f);
  }
  return out;
}

std::vector<uint8_t> stored(DType type, const std::vector<float>& x) {
  std::vector<uint8_t> bytes(*tensor::row_bytes(type, static_cast<int64_t>(x.size())));
  tensor::quantize_row(type, x.data(), bytes.data(), static_cast<int64_t>(x.size()));
  return bytes;
}

class QuantizeModel : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("lumen_quantize_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    input_ = (dir_ / "in.gguf").string();
    output_ = (dir_ / "out.gguf").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // A two-layer llama-shaped model; `matrix_type` for the 2-D weights, norms in F32.
  void write_input(DType matrix_type) {
    gguf::GgufWriter writer;
    writer.metadata().set("general.architecture", gguf::Value::of_string("llama"));
    writer.metadata().set("llama.block_count", gguf::Value::u32(2));
    writer.metadata().set("llama.attention.head_count", gguf::Value::u32(4));
    writer.metadata().set("general.file_type", gguf::Value::u32(1));
    writer.metadata().set("general.name", gguf::Value::of_string("tiny"));
    auto add = [&](const std::string& name, DType type, std::vector<int64_t> dims, float scale) {
      const int64_t n = dims[0] * (dims.size() > 1 ? dims[1] : 1);
      const std::vector<float> x = values(n, scale, static_cast<uint32_t>(name.size() * 7919));
      originals_[name] = x;
      writer.add_tensor(name, type, std::move(dims), stored(type, x));
    };
    add("token_embd.weight", matrix_type, {kWidth, kVocab}, 0.1f);
    add("output_norm.weight", DType::F32, {kWidth}, 1.0f);
    for (int layer = 0; layer < 2; ++layer) {
      const std::string blk = "blk." + std::to_string(layer) + ".";
      add(blk + "attn_norm.weight", DType::F32, {kWidth}, 1.0f);
      add(blk + "attn_v.weight", matrix_type, {kWidth, 64}, 0.05f);
      add(blk + "ffn_down.weight", matrix_type, {kWidth, kWidth}, 0.05f);
    }
    writer.write(input_);
  }

  fs::path dir_;
  std::string input_;
  std::string output_;
  std::map<std::string, std::vector<float>> originals_;
};

TEST_F(QuantizeModel, TypesBytesAndMetadataAreLlamaQuantizes) {
  write_input(DType::F16);
  QuantizeOptions options;
  options.mix = Mix::Q4_K_M;
  options.threads = 3;
  const QuantizeReport report = quantize_model(input_, output_, options);
  EXPECT_FALSE(report.plan.requantizes);

  const gguf::GgufFile input = gguf::GgufFile::open(input_);
  const gguf::GgufFile out = gguf::GgufFile::open(output_);
  // Non-block tensors first, then by layer and name; Q4_K_M's types for a 2-layer model.
  std::vector<std::string> names;
  for (const auto& t : out.tensors()) names.push_back(t.name);
  EXPECT_EQ(names, (std::vector<std::string>{"output_norm.weight", "token_embd.weight",
                                             "blk.0.attn_norm.weight", "blk.0.attn_v.weight",
                                             "blk.0.ffn_down.weight", "blk.1.attn_norm.weight",
                                             "blk.1.attn_v.weight", "blk.1.ffn_down.weight"}));
  EXPECT_EQ(out.tensor("token_embd.weight").type, DType::Q6_K);  // tied: the output
  // Of two layers only the last is in "the last eighth" that gets more bits.
  EXPECT_EQ(out.tensor("blk.0.attn_v.weight").type, DType::Q4_K);
  EXPECT_EQ(out.tensor("blk.1.attn_v.weight").type, DType::Q6_K);
  EXPECT_EQ(out.tensor("blk.1.ffn_down.weight").type, DType::Q6_K);
  EXPECT_EQ(out.tensor("blk.0.attn_norm.weight").type, DType::F32);

  for (const auto& t : out.tensors()) {
    const gguf::TensorInfo& source = input.tensor(t.name);
    if (t.type == source.type) {
      EXPECT_EQ(0, std::memcmp(t.data, source.data, source.bytes)) << t.name;
      continue;
    }
    std::vector<float> f32(static_cast<size_t>(source.elements));
    tensor::dequantize_row(source.type, source.data, f32.data(), source.elements);
    std::vector<uint8_t> expected(t.bytes);
    tensor::quantize_row_ggml(t.type, f32.data(), expected.data(), source.elements);
    EXPECT_EQ(0, std::memcmp(t.data, expected.data(), t.bytes)) << t.name;
  }
  EXPECT_EQ(out.metadata().get_unsigned("general.file_type"), 15u);
  EXPECT_EQ(out.metadata().get_unsigned("general.quantization_version"), 2u);
  EXPECT_EQ(out.metadata().get_string("general.name"), "tiny");
  EXPECT_EQ(out.metadata().entries().back().first, "general.file_type");
}

TEST_F(QuantizeModel, OneThreadAndManyWriteTheSameFile) {
  write_input(DType::F32);
  QuantizeOptions options;
  options.mix = Mix::Q3_K_S;
  options.threads = 1;
  quantize_model(input_, output_, options);
  const std::string single = (dir_ / "single.gguf").string();
  fs::rename(output_, single);
  options.threads = 4;
  quantize_model(input_, output_, options);
  EXPECT_EQ(fs::file_size(single), fs::file_size(output_));
  const gguf::GgufFile a = gguf::GgufFile::open(single);
  const gguf::GgufFile b = gguf::GgufFile::open(output_);
  for (const auto& t : a.tensors()) {
    EXPECT_EQ(0, std::memcmp(t.data, b.tensor(t.name).data, t.bytes)) << t.name;
  }
}

TEST_F(QuantizeModel, RequantizingNeedsPermission) {
  write_input(DType::Q8_0);
  QuantizeOptions options;
  options.mix = Mix::Q4_0;
  EXPECT_THROW(quantize_model(input_, output_, options), Error);
  EXPECT_FALSE(fs::exists(output_));
  EXPECT_FALSE(fs::exists(output_ + ".tmp"));
  options.allow_requantize = true;
  const QuantizeReport report = quantize_model(input_, output_, options);
  EXPECT_TRUE(report.plan.requantizes);
  EXPECT_EQ(gguf::GgufFile::open(output_).tensor("blk.0.ffn_down.weight").type, DType::Q4_0);
}

TEST_F(QuantizeModel, RefusalsLeaveNoFile) {
  write_input(DType::F16);
  QuantizeOptions options;
  options.mix = Mix::Q4_K_M;
  options.token_embedding_type = DType::Q8_K;  // has no ggml quantizer
  EXPECT_THROW(quantize_model(input_, output_, options), Error);
  EXPECT_FALSE(fs::exists(output_));
  options.token_embedding_type.reset();
  EXPECT_THROW(quantize_model(input_, (dir_ / "missing" / "out.gguf").string(), options), Error);
  EXPECT_THROW(quantize_model((dir_ / "absent.gguf").string(), output_, options), Error);
  EXPECT_FALSE(fs::exists(output_));
  EXPECT_FALSE(fs::exists(output_ + ".tmp"));
}

TEST_F(QuantizeModel, NonFiniteWeightsAreRefusedAndLeaveNoFile) {
  gguf::GgufWriter writer;
  writer.metadata().set("general.architecture", gguf::Value::of_string("llama"));
  std::vector<float> x = values(kWidth * 8, 1.0f, 3);
  x[static_cast<size_t>(kWidth * 5 + 17)] = std::numeric_limits<float>::infinity();
  writer.add_tensor("blk.0.ffn_up.weight", DType::F32, {kWidth, 8}, stored(DType::F32, x));
  writer.write(input_);
  QuantizeOptions options;
  options.mix = Mix::Q8_0;
  try {
    quantize_model(input_, output_, options);
    FAIL() << "an infinite weight was quantized";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("row 5"), std::string::npos) << error.what();
  }
  EXPECT_FALSE(fs::exists(output_));
  EXPECT_FALSE(fs::exists(output_ + ".tmp"));
}

}  // namespace
}  // namespace lumen::quantize
