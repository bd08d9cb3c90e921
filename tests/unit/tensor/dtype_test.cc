// The dtype table: ids, names and block geometry as ggml defines them, and row_bytes' refusal
// of anything that is not a whole, representable number of blocks.
#include "tensor/dtype.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>
#include <string>

#include "tensor/block_formats.h"
#include "util/error.h"

namespace lumen::tensor {
namespace {

struct Expected {
  uint32_t id;
  const char* name;
  int64_t block_elements;
  size_t block_bytes;
};

// Written out from ggml's type_traits (Q8_1 is ggml's current 36-byte block; gguf-py 0.19 still
// says 40, see dtype.cc).
constexpr Expected kExpected[] = {
    {0, "F32", 1, 4},          {1, "F16", 1, 2},           {2, "Q4_0", 32, 18},
    {3, "Q4_1", 32, 20},       {6, "Q5_0", 32, 22},        {7, "Q5_1", 32, 24},
    {8, "Q8_0", 32, 34},       {9, "Q8_1", 32, 36},        {10, "Q2_K", 256, 84},
    {11, "Q3_K", 256, 110},    {12, "Q4_K", 256, 144},     {13, "Q5_K", 256, 176},
    {14, "Q6_K", 256, 210},    {15, "Q8_K", 256, 292},     {16, "IQ2_XXS", 256, 66},
    {17, "IQ2_XS", 256, 74},   {18, "IQ3_XXS", 256, 98},   {19, "IQ1_S", 256, 50},
    {20, "IQ4_NL", 32, 18},    {21, "IQ3_S", 256, 110},    {22, "IQ2_S", 256, 82},
    {23, "IQ4_XS", 256, 136},  {24, "I8", 1, 1},           {25, "I16", 1, 2},
    {26, "I32", 1, 4},         {27, "I64", 1, 8},          {28, "F64", 1, 8},
    {29, "IQ1_M", 256, 56},    {30, "BF16", 1, 2},         {34, "TQ1_0", 256, 54},
    {35, "TQ2_0", 256, 66},    {39, "MXFP4", 32, 17},      {40, "NVFP4", 64, 36},
    {41, "Q1_0", 128, 18},
};

TEST(DTypeTable, EveryTypeHasGgmlGeometry) {
  for (const Expected& e : kExpected) {
    SCOPED_TRACE(e.name);
    const DTypeInfo* info = dtype_info(e.id);
    ASSERT_NE(info, nullptr);
    EXPECT_EQ(static_cast<uint32_t>(info->type), e.id);
    EXPECT_EQ(info->name, e.name);
    EXPECT_EQ(info->block_elements, e.block_elements);
    EXPECT_EQ(info->block_bytes, e.block_bytes);
    EXPECT_EQ(&dtype_info(info->type), info);
    EXPECT_EQ(dtype_name(info->type), e.name);
  }
}

TEST(DTypeTable, RemovedAndUnknownIdsHaveNoInfo) {
  std::set<uint32_t> known;
  for (const Expected& e : kExpected) known.insert(e.id);
  for (uint32_t id = 0; id < 200; ++id) {
    EXPECT_EQ(dtype_info(id) != nullptr, known.count(id) == 1) << "id " << id;
  }
  for (const uint32_t removed : {4u, 5u, 31u, 32u, 33u, 36u, 37u, 38u, 42u}) {
    EXPECT_EQ(dtype_info(removed), nullptr) << "id " << removed;
  }
  EXPECT_EQ(dtype_info(std::numeric_limits<uint32_t>::max()), nullptr);
  EXPECT_THROW(dtype_info(static_cast<DType>(4)), Error);
  EXPECT_THROW(dtype_info(static_cast<DType>(1000)), Error);
}

TEST(DTypeTable, NamesParseCaseInsensitively) {
  for (const Expected& e : kExpected) {
    EXPECT_EQ(dtype_from_name(e.name), static_cast<DType>(e.id));
    std::string lower = e.name;
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    EXPECT_EQ(dtype_from_name(lower), static_cast<DType>(e.id));
  }
  EXPECT_EQ(dtype_from_name("q4_k"), DType::Q4_K);
  EXPECT_EQ(dtype_from_name("Bf16"), DType::BF16);
  EXPECT_FALSE(dtype_from_name(""));
  EXPECT_FALSE(dtype_from_name("Q4_2"));
  EXPECT_FALSE(dtype_from_name("Q4_K "));
  EXPECT_FALSE(dtype_from_name("Q4"));
}

TEST(DTypeTable, ReferenceKernelsExactlyForTheSupportedTypes) {
  const std::set<DType> supported = {DType::F32,  DType::F16,  DType::BF16, DType::Q4_0,   DType::Q4_1,   DType::Q5_0,
                                     DType::Q5_1, DType::Q8_0, DType::Q8_1, DType::Q2_K,   DType::Q3_K,   DType::Q4_K,
                                     DType::Q5_K, DType::Q6_K, DType::Q8_K, DType::IQ4_NL, DType::IQ4_XS, DType::MXFP4};
  for (const Expected& e : kExpected) {
    const auto type = static_cast<DType>(e.id);
    EXPECT_EQ(has_reference_kernels(type), supported.count(type) == 1) << e.name;
  }
}

TEST(DTypeTable, BlockStructsMatchTheTable) {
  EXPECT_EQ(sizeof(BlockQ4_0), dtype_info(DType::Q4_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_1), dtype_info(DType::Q4_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_0), dtype_info(DType::Q5_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_1), dtype_info(DType::Q5_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_0), dtype_info(DType::Q8_0).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_1), dtype_info(DType::Q8_1).block_bytes);
  EXPECT_EQ(sizeof(BlockQ2_K), dtype_info(DType::Q2_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ3_K), dtype_info(DType::Q3_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ4_K), dtype_info(DType::Q4_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ5_K), dtype_info(DType::Q5_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ6_K), dtype_info(DType::Q6_K).block_bytes);
  EXPECT_EQ(sizeof(BlockQ8_K), dtype_info(DType::Q8_K).block_bytes);
  EXPECT_EQ(sizeof(BlockMXFP4), dtype_info(DType::MXFP4).block_bytes);
  EXPECT_EQ(dtype_info(DType::Q4_0).block_elements, kLegacyBlock);
  EXPECT_EQ(dtype_info(DType::Q6_K).block_elements, kSuperBlock);
}

TEST(RowBytes, WholeBlocks) {
  EXPECT_EQ(row_bytes(DType::F32, 1), 4u);
  EXPECT_EQ(row_bytes(DType::F32, 4096), 16384u);
  EXPECT_EQ(row_bytes(DType::F16, 3), 6u);
  EXPECT_EQ(row_bytes(DType::BF16, 7), 14u);
  EXPECT_EQ(row_bytes(DType::Q4_0, 32), 18u);
  EXPECT_EQ(row_bytes(DType::Q4_0, 4096), 128u * 18u);
  EXPECT_EQ(row_bytes(DType::Q8_0, 96), 3u * 34u);
  EXPECT_EQ(row_bytes(DType::Q4_K, 256), 144u);
  EXPECT_EQ(row_bytes(DType::Q6_K, 11008), 43u * 210u);
  EXPECT_EQ(row_bytes(DType::MXFP4, 64), 34u);
  EXPECT_EQ(row_bytes(DType::NVFP4, 64), 36u);
  EXPECT_EQ(row_bytes(DType::Q1_0, 128), 18u);
}

TEST(RowBytes, RefusesPartialBlocksAndNonPositiveCounts) {
  EXPECT_EQ(row_bytes(DType::F32, 0), std::nullopt);
  EXPECT_EQ(row_bytes(DType::F32, -1), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_0, 0), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_0, -32), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_0, 31), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_0, 33), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_K, 128), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_K, 255), std::nullopt);
  EXPECT_EQ(row_bytes(DType::NVFP4, 32), std::nullopt);
  EXPECT_EQ(row_bytes(DType::Q4_K, std::numeric_limits<int64_t>::min()), std::nullopt);
  EXPECT_EQ(row_bytes(static_cast<DType>(4), 32), std::nullopt);
}

TEST(RowBytes, RefusesSizesThatOverflow) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  // Fits: INT64_MAX elements of a 1-byte type, and 2^62 F16 elements (2^63 bytes).
  EXPECT_EQ(row_bytes(DType::I8, kMax), static_cast<uint64_t>(kMax));
  EXPECT_EQ(row_bytes(DType::F16, int64_t{1} << 62), uint64_t{1} << 63);
  // 2^63 - 1 eight-byte elements need more than 64 bits.
  EXPECT_EQ(row_bytes(DType::F64, kMax), std::nullopt);
  EXPECT_EQ(row_bytes(DType::F32, int64_t{1} << 62), std::nullopt);
  EXPECT_EQ(row_bytes(DType::I64, int64_t{1} << 61), std::nullopt);
  EXPECT_EQ(row_bytes(DType::F32, (int64_t{1} << 62) - 1),
            std::numeric_limits<uint64_t>::max() - 3);
  EXPECT_EQ(row_bytes(DType::F32, int64_t{1} << 61), uint64_t{1} << 63);
  // Block types store under 2 bytes per element, so any int64 count fits in 64 bits of bytes.
  EXPECT_EQ(row_bytes(DType::Q8_K, kMax / 256 * 256), static_cast<uint64_t>(kMax / 256) * 292u);
}

}  // namespace
}  // namespace lumen::tensor
