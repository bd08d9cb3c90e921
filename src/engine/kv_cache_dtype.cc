#include "engine/kv_cache_dtype.h"

#include <array>
#include <cctype>
#include <string>
#include <utility>

namespace lumen {

namespace {

// The names vLLM's --kv-cache-dtype and llama.cpp's -ctk / -ctv use ("fp8" is vLLM's alias of
// fp8_e4m3), in the order the error message lists them.
constexpr std::array<std::pair<std::string_view, KvCacheDtype>, 6> kNames{{
    {"f16", KvCacheDtype::F16},
    {"bf16", KvCacheDtype::Bf16},
    {"q8_0", KvCacheDtype::Q8_0},
    {"q4_0", KvCacheDtype::Q4_0},
    {"fp8_e4m3", KvCacheDtype::Fp8E4m3},
    {"fp8", KvCacheDtype::Fp8E4m3},
}};

}  // namespace

std::optional<KvCacheDtype> parse_kv_cache_dtype(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (lower == "auto" || lower == "float16" || lower == "fp16") return KvCacheDtype::F16;  // vLLM's spellings
  for (const auto& [known, dtype] : kNames) {
    if (lower == known) return dtype;
  }
  return std::nullopt;
}

std::string_view kv_cache_dtype_name(KvCacheDtype dtype) {
  for (const auto& [known, value] : kNames) {
    if (value == dtype) return known;
  }
  return "f16";
}

std::string_view kv_cache_dtype_choices() { return "f16, bf16, q8_0, q4_0, fp8_e4m3"; }

namespace engine {

tensor::DType kv_tensor_type(KvCacheDtype dtype) {
  switch (dtype) {
    case KvCacheDtype::F16: return tensor::DType::F16;
    case KvCacheDtype::Bf16: return tensor::DType::BF16;
    case KvCacheDtype::Q8_0: return tensor::DType::Q8_0;
    case KvCacheDtype::Q4_0: return tensor::DType::Q4_0;
    case KvCacheDtype::Fp8E4m3: return tensor::DType::FP8_E4M3;
  }
  return tensor::DType::F16;
}

}  // namespace engine

}  // namespace lumen
