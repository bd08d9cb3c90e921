#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <random>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "tensor/dtype.h"
#include "util/error.h"

namespace lumen::gguf {
namespace {

using tensor::DType;

Metadata every_kind_of_value() {
  Metadata md;
  md.set("general.architecture", Value::of_string("llama"));
  md.set("u8", Value::of_unsigned(ValueType::U8, 255));
  md.set("i8", Value::of_signed(ValueType::I8, -128));
  md.set("u16", Value::of_unsigned(ValueType::U16, 65535));
  md.set("i16", Value::of_signed(ValueType::I16, -32768));
  md.set("u32", Value::u32(4000000000u));
  md.set("i32", Value::i32(-2000000000));
  md.set("u64", Value::u64(UINT64_MAX));
  md.set("i64", Value::of_signed(ValueType::I64, INT64_MIN));
  md.set("f32", Value::f32(-1.5e-7f));
  md.set("f64", Value::of_float(ValueType::F64, 3.141592653589793));
  md.set("bool", Value::of_bool(true));
  static constexpr char kText[] = "utf-8 \xe2\x9c\x93 and a \0 byte";  // an embedded NUL too
  md.set("string", Value::of_string(std::string(kText, sizeof(kText) - 1)));
  md.set("empty_string", Value::of_string(""));
  md.set("strings", Value::string_array({"a", "", "\xf0\x9f\x98\x80"}));
  md.set("floats", Value::f32_array(std::vector<float>{1.0f, -2.0f, 0.25f}));
  md.set("ints", Value::i32_array(std::vector<int32_t>{}));
  Array nested;
  nested.element_type = ValueType::ARRAY;
  nested.length = 2;
  nested.arrays = {Value::i32_array(std::vector<int32_t>{1, 2}), Value::string_array({"x"})};
  md.set("nested", Value::of_array(nested));
  return md;
}

std::vector<uint8_t> random_bytes(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

struct TensorCase {
  std::string name;
  DType type;
  std::vector<int64_t> dims;
};

void expect_round_trip(uint32_t alignment) {
  GgufWriter writer(alignment);
  const Metadata source = every_kind_of_value();
  for (const auto& [key, value] : source.entries()) writer.metadata().set(key, value);
  std::vector<TensorCase> cases = {
      {"token_embd.weight", DType::Q4_0, {64, 3}},
      {"blk.0.attn_norm.weight", DType::F32, {7}},
      {"blk.0.ffn_down.weight", DType::Q6_K, {256, 2, 1}},
      {"bf16", DType::BF16, {3, 5, 2, 1}},
  };
  std::vector<std::vector<uint8_t>> payloads;
  for (size_t i = 0; i < cases.size(); ++i) {
    int64_t rows = 1;
    for (size_t d = 1; d < cases[i].dims.size(); ++d) rows *= cases[i].dims[d];
    size_t bytes = *tensor::row_bytes(cases[i].type, cases[i].dims[0]) * static_cast<size_t>(rows);
    payloads.push_back(random_bytes(bytes, static_cast<uint32_t>(i)));
    writer.add_tensor(cases[i].name, cases[i].type, cases[i].dims, payloads.back());
  }

  std::vector<uint8_t> bytes = writer.write_to_memory();
  GgufFile file = GgufFile::parse(bytes);
  EXPECT_EQ(file.version(), 3u);
  EXPECT_EQ(file.alignment(), alignment);
  EXPECT_EQ(file.data_offset() % alignment, 0u);
  EXPECT_TRUE(file.metadata() == writer.metadata());
  ASSERT_EQ(file.tensors().size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const TensorInfo& t = file.tensor(cases[i].name);
    EXPECT_EQ(t.type, cases[i].type);
    EXPECT_EQ(t.dims, cases[i].dims);
    EXPECT_EQ(t.offset % alignment, 0u);
    ASSERT_EQ(t.bytes, payloads[i].size());
    EXPECT_TRUE(std::equal(payloads[i].begin(), payloads[i].end(), t.data)) << cases[i].name;
  }
  // Writing what was read gives the same bytes back.
  GgufWriter again(alignment);
  for (const auto& [key, value] : file.metadata().entries()) again.metadata().set(key, value);
  for (const TensorInfo& t : file.tensors()) again.add_tensor(t.name, t.type, t.dims, t.span());
  EXPECT_EQ(again.write_to_memory(), bytes);
}

TEST(GgufRoundTrip, DefaultAlignment) { expect_round_trip(32); }
TEST(GgufRoundTrip, CustomAlignment) { expect_round_trip(64); }
TEST(GgufRoundTrip, PageAlignment) { expect_round_trip(4096); }

// Version 2 differs from 3 only in promising little-endian data, so the same bytes read as both.
TEST(GgufReader, ReadsVersion2) {
  GgufWriter writer;
  writer.metadata().set("general.architecture", Value::of_string("llama"));
  std::vector<float> values = {1.0f, 2.0f};
  writer.add_tensor("t", DType::F32, {2},
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(values.data()), 8));
  auto bytes = writer.write_to_memory();
  bytes[4] = 2;  // the version field follows the 4-byte magic
  GgufFile file = GgufFile::parse(bytes);
  EXPECT_EQ(file.version(), 2u);
  EXPECT_EQ(reinterpret_cast<const float*>(file.tensor("t").data)[1], 2.0f);
}

TEST(GgufRoundTrip, MetadataOnlyFileHasNoPadding) {
  GgufWriter writer;
  writer.metadata().set("general.architecture", Value::of_string("llama"));
  auto bytes = writer.write_to_memory();
  EXPECT_EQ(bytes.size(), 4u + 4 + 8 + 8 + (8 + 20) + 4 + (8 + 5));
  GgufFile file = GgufFile::parse(bytes);
  EXPECT_TRUE(file.tensors().empty());
  EXPECT_EQ(file.metadata().get_string("general.architecture"), "llama");
}

TEST(GgufRoundTrip, WritesFilesAtomically) {
  auto path = (std::filesystem::temp_directory_path() / "lumen_writer_test.gguf").string();
  GgufWriter writer;
  writer.metadata().set("k", Value::u32(1));
  std::vector<float> values = {1, 2, 3, 4};
  std::span<const uint8_t> raw(reinterpret_cast<const uint8_t*>(values.data()),
                               values.size() * sizeof(float));
  writer.add_tensor("t", DType::F32, {4}, raw);
  writer.write(path);
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  GgufFile file = GgufFile::open(path);
  EXPECT_EQ(reinterpret_cast<const float*>(file.tensor("t").data)[3], 4.0f);
  std::remove(path.c_str());
}

TEST(GgufRoundTrip, FillCallbackProducesTensorData) {
  GgufWriter writer;
  writer.add_tensor("ramp", DType::F32, {8, 2}, [](std::span<uint8_t> out) {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<uint8_t>(i);
  });
  auto bytes = writer.write_to_memory();
  GgufFile file = GgufFile::parse(bytes);
  EXPECT_EQ(file.tensor("ramp").bytes, 64u);
  EXPECT_EQ(file.tensor("ramp").data[63], 63);
}

// The spec allows arrays of arrays; the reader bounds the depth so a hostile file cannot
// recurse it off the stack.
TEST(GgufReader, ArrayNestingIsBounded) {
  auto nest = [](int depth) {
    Value value = Value::i32_array(std::vector<int32_t>{7});
    for (int i = 1; i < depth; ++i) {
      Array outer;
      outer.element_type = ValueType::ARRAY;
      outer.length = 1;
      outer.arrays = {value};
      value = Value::of_array(outer);
    }
    GgufWriter writer;
    writer.metadata().set("nest", value);
    return writer.write_to_memory();
  };
  auto ok = nest(kMaxArrayNesting);
  EXPECT_EQ(GgufFile::parse(ok).metadata().find("nest")->as_array().arrays.size(), 1u);
  auto too_deep = nest(kMaxArrayNesting + 1);
  try {
    GgufFile::parse(too_deep);
    FAIL() << "accepted arrays nested " << kMaxArrayNesting + 1 << " deep";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("nested deeper"), std::string::npos) << e.what();
  }
}

TEST(GgufWriter, RejectsWhatTheReaderWouldReject) {
  GgufWriter writer;
  std::vector<uint8_t> data(18);
  EXPECT_THROW(writer.add_tensor("q", DType::Q4_0, {33}, data), Error);          // not whole blocks
  EXPECT_THROW(writer.add_tensor("q", DType::Q4_0, {32, 0}, data), Error);       // zero dim
  EXPECT_THROW(writer.add_tensor(std::string(64, 'n'), DType::Q4_0, {32}, data), Error);
  EXPECT_THROW(writer.add_tensor("q", DType::Q4_0, {64}, data), Error);          // wrong byte count
  writer.add_tensor("q", DType::Q4_0, {32}, data);
  EXPECT_THROW(writer.add_tensor("q", DType::Q4_0, {32}, data), Error);          // duplicate
  EXPECT_THROW(GgufWriter(48), Error);
  // After the rejected calls the writer still produces a valid file.
  auto bytes = writer.write_to_memory();
  EXPECT_EQ(GgufFile::parse(bytes).tensors().size(), 1u);
}

}  // namespace
}  // namespace lumen::gguf
