#include "quantize/quant_mix.h"

#include <array>
#include <cctype>

namespace lumen::quantize {
namespace {

using tensor::DType;

// llama_ftype numbers from llama.cpp's include/llama.h.
constexpr std::array kMixes = {
    MixInfo{Mix::Q4_0, "Q4_0", 2, DType::Q4_0},        MixInfo{Mix::Q4_1, "Q4_1", 3, DType::Q4_1},
    MixInfo{Mix::Q5_0, "Q5_0", 8, DType::Q5_0},        MixInfo{Mix::Q5_1, "Q5_1", 9, DType::Q5_1},
    MixInfo{Mix::Q8_0, "Q8_0", 7, DType::Q8_0},        MixInfo{Mix::Q2_K, "Q2_K", 10, DType::Q2_K},
    MixInfo{Mix::Q3_K_S, "Q3_K_S", 11, DType::Q3_K},   MixInfo{Mix::Q3_K_M, "Q3_K_M", 12, DType::Q3_K},
    MixInfo{Mix::Q3_K_L, "Q3_K_L", 13, DType::Q3_K},   MixInfo{Mix::Q4_K_S, "Q4_K_S", 14, DType::Q4_K},
    MixInfo{Mix::Q4_K_M, "Q4_K_M", 15, DType::Q4_K},   MixInfo{Mix::Q5_K_S, "Q5_K_S", 16, DType::Q5_K},
    MixInfo{Mix::Q5_K_M, "Q5_K_M", 17, DType::Q5_K},   MixInfo{Mix::Q6_K, "Q6_K", 18, DType::Q6_K},
    MixInfo{Mix::IQ4_NL, "IQ4_NL", 25, DType::IQ4_NL}, MixInfo{Mix::IQ4_XS, "IQ4_XS", 30, DType::IQ4_XS},
    MixInfo{Mix::F16, "F16", 1, DType::F16},           MixInfo{Mix::BF16, "BF16", 32, DType::BF16},
    MixInfo{Mix::F32, "F32", 0, DType::F32},
};

constexpr bool table_follows_enum() {
  for (size_t i = 0; i < kMixes.size(); ++i) {
    if (static_cast<size_t>(kMixes[i].mix) != i) return false;
  }
  return true;
}
static_assert(table_follows_enum(), "kMixes is indexed by Mix");

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::toupper(static_cast<unsigned char>(a[i])) !=
        std::toupper(static_cast<unsigned char>(b[i]))) {
      return false;
    }
  }
  return true;
}

}  // namespace

const MixInfo& mix_info(Mix mix) { return kMixes[static_cast<size_t>(mix)]; }

std::optional<Mix> mix_from_name(std::string_view name) {
  for (const MixInfo& info : kMixes) {
    if (equals_ignoring_case(info.name, name)) return info.mix;
  }
  return std::nullopt;
}

std::optional<std::string_view> mix_name_for_ftype(uint32_t llama_ftype) {
  for (const MixInfo& info : kMixes) {
    if (info.llama_ftype == llama_ftype) return info.name;
  }
  return std::nullopt;
}

std::string mix_names() {
  std::string names;
  for (const MixInfo& info : kMixes) {
    if (!names.empty()) names += ", ";
    names += info.name;
  }
  return names;
}

bool is_quantized(tensor::DType type) {
  switch (type) {
    case DType::F32: case DType::F16: case DType::BF16: case DType::F64:
    case DType::I8: case DType::I16: case DType::I32: case DType::I64:
      return false;
    default:
      return true;
  }
}

}  // namespace lumen::quantize
