// The dtype table: one row per ggml type id, in id order, so a raw id from a file indexes it
// directly. Block geometry follows ggml's type_traits (each entry checked against gguf-py's
// GGML_QUANT_SIZES by tests/python/test_quant_exact.py). Ids that ggml removed keep an empty
// row so they stay unreadable instead of shifting the later ids.
#include "tensor/dtype.h"

#include <array>
#include <cctype>
#include <cstddef>

#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::tensor {
namespace {

constexpr int64_t kQK = 256;  // elements in a K-quant / IQ super-block

// A row with block_elements == 0 marks an id that is not (or no longer) a type.
constexpr DTypeInfo kRemoved{DType::F32, "", 0, 0};

// Q8_1 note: gguf-py still lists Q8_1 as 40 bytes (two f32 fields, the layout ggml used before
// 2024); ggml's block_q8_1 is now two f16 fields + 32 quants = 36 bytes, and that is what
// llama.cpp computes for a Q8_1 tensor. Lumen follows ggml.
constexpr std::array<DTypeInfo, 42> kTable{{
    {DType::F32, "F32", 1, 4},
    {DType::F16, "F16", 1, 2},
    {DType::Q4_0, "Q4_0", 32, 2 + 16},
    {DType::Q4_1, "Q4_1", 32, 2 + 2 + 16},
    kRemoved,  // 4: Q4_2, removed
    kRemoved,  // 5: Q4_3, removed
    {DType::Q5_0, "Q5_0", 32, 2 + 4 + 16},
    {DType::Q5_1, "Q5_1", 32, 2 + 2 + 4 + 16},
    {DType::Q8_0, "Q8_0", 32, 2 + 32},
    {DType::Q8_1, "Q8_1", 32, 2 + 2 + 32},
    {DType::Q2_K, "Q2_K", kQK, 2 + 2 + kQK / 16 + kQK / 4},
    {DType::Q3_K, "Q3_K", kQK, 2 + kQK / 4 + kQK / 8 + 12},
    {DType::Q4_K, "Q4_K", kQK, 2 + 2 + 12 + kQK / 2},
    {DType::Q5_K, "Q5_K", kQK, 2 + 2 + 12 + kQK / 2 + kQK / 8},
    {DType::Q6_K, "Q6_K", kQK, 2 + kQK / 16 + 3 * kQK / 4},
    {DType::Q8_K, "Q8_K", kQK, 4 + kQK + 2 * (kQK / 16)},
    {DType::IQ2_XXS, "IQ2_XXS", kQK, 2 + kQK / 4},
    {DType::IQ2_XS, "IQ2_XS", kQK, 2 + kQK / 4 + kQK / 32},
    {DType::IQ3_XXS, "IQ3_XXS", kQK, 2 + 3 * kQK / 8},
    {DType::IQ1_S, "IQ1_S", kQK, 2 + kQK / 8 + kQK / 16},
    {DType::IQ4_NL, "IQ4_NL", 32, 2 + 16},
    {DType::IQ3_S, "IQ3_S", kQK, 2 + 13 * (kQK / 32) + kQK / 64},
    {DType::IQ2_S, "IQ2_S", kQK, 2 + kQK / 4 + kQK / 16},
    {DType::IQ4_XS, "IQ4_XS", kQK, 2 + 2 + kQK / 64 + kQK / 2},
    {DType::I8, "I8", 1, 1},
    {DType::I16, "I16", 1, 2},
    {DType::I32, "I32", 1, 4},
    {DType::I64, "I64", 1, 8},
    {DType::F64, "F64", 1, 8},
    {DType::IQ1_M, "IQ1_M", kQK, kQK / 8 + kQK / 16 + kQK / 32},
    {DType::BF16, "BF16", 1, 2},
    kRemoved,  // 31: Q4_0_4_4, removed (repacking moved into ggml's CPU backend)
    kRemoved,  // 32: Q4_0_4_8, removed
    kRemoved,  // 33: Q4_0_8_8, removed
    {DType::TQ1_0, "TQ1_0", kQK, 2 + kQK / 64 + (kQK - 4 * kQK / 64) / 5},
    {DType::TQ2_0, "TQ2_0", kQK, 2 + kQK / 4},
    kRemoved,  // 36: IQ4_NL_4_4, removed
    kRemoved,  // 37: IQ4_NL_4_8, removed
    kRemoved,  // 38: IQ4_NL_8_8, removed
    {DType::MXFP4, "MXFP4", 32, 1 + 16},
    {DType::NVFP4, "NVFP4", 64, 4 + 32},
    {DType::Q1_0, "Q1_0", 128, 2 + 16},
}};

// Every live row must sit at the index of its own id, or dtype_info(raw) would lie.
constexpr bool table_is_indexed_by_id() {
  for (size_t i = 0; i < kTable.size(); ++i) {
    if (kTable[i].block_elements != 0 && static_cast<size_t>(kTable[i].type) != i) return false;
  }
  return true;
}
static_assert(table_is_indexed_by_id(), "dtype table rows must be in id order");

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto ca = static_cast<unsigned char>(a[i]);
    const auto cb = static_cast<unsigned char>(b[i]);
    if (std::toupper(ca) != std::toupper(cb)) return false;
  }
  return true;
}

}  // namespace

const DTypeInfo* dtype_info(uint32_t raw_type) {
  if (raw_type >= kTable.size()) return nullptr;
  const DTypeInfo& info = kTable[raw_type];
  return info.block_elements == 0 ? nullptr : &info;
}

constexpr DTypeInfo kFp8E4m3{DType::FP8_E4M3, "FP8_E4M3", 1, 1};

const DTypeInfo& dtype_info(DType type) {
  if (type == DType::FP8_E4M3) return kFp8E4m3;
  const DTypeInfo* info = dtype_info(static_cast<uint32_t>(type));
  // Only a DType forged from an unchecked integer can get here.
  if (info == nullptr) fail("invalid tensor type id {}", static_cast<uint32_t>(type));
  return *info;
}

std::optional<DType> dtype_from_name(std::string_view name) {
  for (const DTypeInfo& info : kTable) {
    if (info.block_elements != 0 && equals_ignoring_case(info.name, name)) return info.type;
  }
  return std::nullopt;
}

std::string_view dtype_name(DType type) { return dtype_info(type).name; }

std::optional<uint64_t> row_bytes(DType type, int64_t elements) {
  const DTypeInfo* info = type == DType::FP8_E4M3 ? &kFp8E4m3 : dtype_info(static_cast<uint32_t>(type));
  if (info == nullptr || elements <= 0) return std::nullopt;
  if (elements % info->block_elements != 0) return std::nullopt;
  const auto blocks = static_cast<uint64_t>(elements / info->block_elements);
  return checked_mul(blocks, static_cast<uint64_t>(info->block_bytes));
}

bool has_reference_kernels(DType type) {
  switch (type) {
    case DType::F32:
    case DType::F16:
    case DType::BF16:
    case DType::FP8_E4M3:
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q8_1:
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q8_K:
    case DType::IQ4_NL:
    case DType::IQ4_XS:
    case DType::MXFP4: return true;
    default:
      return false;
  }
}

}  // namespace lumen::tensor
