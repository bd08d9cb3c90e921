// llama.cpp's imatrix GGUF format (quantize/imatrix_file.h): what is written reads back the
// same (dense entries 1-D, expert entries one row per matrix), the importance is sums / count
// with 1 for a matrix that saw nothing, and every malformed file is refused with its name.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <unistd.h>
#include <vector>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "quantize/imatrix_file.h"
#include "util/error.h"

namespace lumen::quantize {
namespace {

namespace fs = std::filesystem;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("lumen_imatrix_" + std::to_string(getpid()) + "_" + name)).string();
}

Imatrix sample() {
  Imatrix imatrix;
  imatrix.datasets = {"calibration.txt"};
  imatrix.chunk_count = 3;
  imatrix.chunk_size = 512;
  imatrix.entries["blk.0.attn_q.weight"] = {4, {1.0f, 2.0f, 3.0f, 4.0f}, {2}};
  // Two experts; the second saw no token.
  imatrix.entries["blk.0.ffn_up_exps.weight"] = {2, {6.0f, 9.0f, 0.0f, 0.0f}, {3, 0}};
  return imatrix;
}

TEST(ImatrixFile, WritesWhatItReadsInLlamaCppsShapes) {
  const std::string path = temp_path("roundtrip.gguf");
  write_imatrix(path, sample());
  const gguf::GgufFile file = gguf::GgufFile::open(path);
  EXPECT_EQ(file.metadata().get_string("general.type"), "imatrix");
  EXPECT_EQ(file.tensor("blk.0.attn_q.weight.in_sum2").dims, (std::vector<int64_t>{4}));
  EXPECT_EQ(file.tensor("blk.0.attn_q.weight.counts").dims, (std::vector<int64_t>{1}));
  EXPECT_EQ(file.tensor("blk.0.ffn_up_exps.weight.in_sum2").dims, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(file.tensor("blk.0.ffn_up_exps.weight.counts").dims, (std::vector<int64_t>{1, 2}));

  const Imatrix back = read_imatrix(path);
  EXPECT_EQ(back.datasets, sample().datasets);
  EXPECT_EQ(back.chunk_count, 3u);
  EXPECT_EQ(back.chunk_size, 512u);
  ASSERT_EQ(back.entries.size(), 2u);
  const ImatrixEntry& experts = back.entries.at("blk.0.ffn_up_exps.weight");
  EXPECT_EQ(experts.columns, 2);
  EXPECT_EQ(experts.counts, (std::vector<int64_t>{3, 0}));
  EXPECT_EQ(importance_of(experts), (std::vector<float>{2.0f, 3.0f, 1.0f, 1.0f}));
  EXPECT_EQ(importance_of(back.entries.at("blk.0.attn_q.weight")), (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  fs::remove(path);
}

// A file built by hand: `edit` changes the writer before it writes.
std::string refusal(const std::string& name, const std::function<void(gguf::GgufWriter&)>& edit) {
  const std::string path = temp_path(name);
  gguf::GgufWriter writer;
  writer.metadata().set("general.type", gguf::Value::of_string("imatrix"));
  writer.metadata().set("imatrix.datasets", gguf::Value::string_array({"t"}));
  writer.metadata().set("imatrix.chunk_count", gguf::Value::u32(1));
  writer.metadata().set("imatrix.chunk_size", gguf::Value::u32(512));
  edit(writer);
  writer.write(path);
  std::string message;
  try {
    read_imatrix(path);
  } catch (const Error& e) {
    message = e.what();
  }
  fs::remove(path);
  EXPECT_NE(message.find(path), std::string::npos) << message;
  return message;
}

std::vector<uint8_t> f32_bytes(std::vector<float> values) {
  std::vector<uint8_t> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

TEST(ImatrixFile, RefusesWhatIsNotAnImatrix) {
  EXPECT_NE(refusal("model.gguf", [](gguf::GgufWriter& w) {
              w.metadata().set("general.type", gguf::Value::of_string("model"));
            }).find("not an importance matrix"), std::string::npos);
  EXPECT_NE(refusal("keys.gguf", [](gguf::GgufWriter& w) {
              w.metadata().erase("imatrix.chunk_size");
            }).find("imatrix.chunk_size"), std::string::npos);
  EXPECT_NE(refusal("empty.gguf", [](gguf::GgufWriter&) {}).find("no entries"), std::string::npos);
  EXPECT_NE(refusal("stray.gguf", [](gguf::GgufWriter& w) {
              w.add_tensor("token_embd.weight", tensor::DType::F32, {2}, f32_bytes({1, 2}));
            }).find("token_embd.weight"), std::string::npos);
}

TEST(ImatrixFile, RefusesBrokenEntries) {
  EXPECT_NE(refusal("nocounts.gguf", [](gguf::GgufWriter& w) {
              w.add_tensor("a.weight.in_sum2", tensor::DType::F32, {2}, f32_bytes({1, 2}));
            }).find(".counts"), std::string::npos);
  EXPECT_NE(refusal("f16.gguf", [](gguf::GgufWriter& w) {
              w.add_tensor("a.weight.in_sum2", tensor::DType::F16, {2}, std::vector<uint8_t>(4));
              w.add_tensor("a.weight.counts", tensor::DType::F32, {1}, f32_bytes({1}));
            }).find("not F32"), std::string::npos);
  EXPECT_NE(refusal("shape.gguf", [](gguf::GgufWriter& w) {
              w.add_tensor("a.weight.in_sum2", tensor::DType::F32, {2, 2}, f32_bytes({1, 2, 3, 4}));
              w.add_tensor("a.weight.counts", tensor::DType::F32, {1}, f32_bytes({1}));
            }).find("2 matrices"), std::string::npos);
  EXPECT_NE(refusal("negative.gguf", [](gguf::GgufWriter& w) {
              w.add_tensor("a.weight.in_sum2", tensor::DType::F32, {2}, f32_bytes({1, -2}));
              w.add_tensor("a.weight.counts", tensor::DType::F32, {1}, f32_bytes({1}));
            }).find("sum of squares"), std::string::npos);
  EXPECT_NE(refusal("count.gguf", [](gguf::GgufWriter& w) {
              w.add_tensor("a.weight.in_sum2", tensor::DType::F32, {2}, f32_bytes({1, 2}));
              w.add_tensor("a.weight.counts", tensor::DType::F32, {1}, f32_bytes({-1}));
            }).find("count of -1"), std::string::npos);
}

}  // namespace
}  // namespace lumen::quantize
