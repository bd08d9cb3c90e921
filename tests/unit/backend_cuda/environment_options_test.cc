// options_with_environment (cuda_backend_env.cc): the LUMEN_CUDA_* switches an operator sets for
// A/B runs. Each takes only its documented values; anything else is refused at start, naming
// the variable, and never half-applied. Needs no device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "scoped_env.h"
#include "util/error.h"

namespace lumen::backend {
namespace {

using lumen::testing::ScopedEnv;

// The on/off switches (0 or 1), and every switch the tests below read, unset for the scope.
constexpr const char* kFlags[] = {"LUMEN_CUDA_GRAPHS",
                                  "LUMEN_CUDA_TREE_ATTENTION",
                                  "LUMEN_CUDA_QUANTIZED_KV",
                                  "LUMEN_CUDA_EXACT_ATTENTION",
                                  "LUMEN_CUDA_ADD_RMS_NORM",
                                  "LUMEN_CUDA_STATE_SPACE",
                                  "LUMEN_CUDA_LATENT_ATTENTION",
                                  "LUMEN_CUDA_KV_EVICTION",
                                  "LUMEN_CUDA_LAYER_NORM",
                                  "LUMEN_CUDA_ENCODER",
                                  "LUMEN_CUDA_ALIBI",
                                  "LUMEN_CUDA_SPAN_ATTENTION",
                                  "LUMEN_CUDA_ATTENTION_SINKS",
                                  "LUMEN_CUDA_RWKV7",
                                  "LUMEN_CUDA_DEVICE_ARGMAX",
                                  "LUMEN_CUDA_DEVICE_LEADING",
                                  "LUMEN_CUDA_TENSOR_CORE_PREFILL",
                                  "LUMEN_CUDA_FUSED_QUANTIZE",
                                  "LUMEN_CUDA_ROPE_LOADS_FIRST",
                                  "LUMEN_CUDA_GROUPED_GEMV",
                                  "LUMEN_CUDA_ROPE_STORE_KV",
                                  "LUMEN_CUDA_ROUTED_MOE",
                                  "LUMEN_CUDA_ENCODER_TENSOR_CORES",
                                  "LUMEN_CUDA_MOE_DEVICE_GEMM",
                                  "LUMEN_CUDA_INT8_GEMM",
                                  "LUMEN_CUDA_DEPENDENT_LAUNCH",
                                  "LUMEN_CUDA_FUSED_COMBINE",
                                  "LUMEN_CUDA_GLU_EPILOGUE"};
constexpr const char* kValueSwitches[] = {"LUMEN_CUDA_GEMV", "LUMEN_CUDA_MAX_GEMV_TOKENS", "LUMEN_CUDA_MOE_GEMV_MACS"};

std::string refusal(const char* name, const char* value) {
  ScopedEnv env(name, value);
  try {
    options_with_environment({});
  } catch (const Error& e) {
    return e.what();
  }
  return "<accepted>";
}

TEST(CudaEnvironmentOptions, MalformedValuesAreRefusedNamingTheVariable) {
  for (const char* value : {"0", "-1", "1048577", "12abc", "", "99999999999999999999999"}) {
    EXPECT_NE(refusal("LUMEN_CUDA_MAX_GEMV_TOKENS", value).find("LUMEN_CUDA_MAX_GEMV_TOKENS"), std::string::npos)
        << value;
  }
  for (const char* name : kFlags) {
    for (const char* value : {"yes", "2", "", "1 "}) EXPECT_NE(refusal(name, value).find(name), std::string::npos);
  }
  EXPECT_NE(refusal("LUMEN_CUDA_GEMV", "fast").find("LUMEN_CUDA_GEMV"), std::string::npos);
  for (const char* value : {"-1", "", "5e8", "1 ", "99999999999999999999999"}) {
    EXPECT_NE(refusal("LUMEN_CUDA_MOE_GEMV_MACS", value).find("LUMEN_CUDA_MOE_GEMV_MACS"), std::string::npos) << value;
  }
}

// Each on/off switch and the option it sets.
struct FlagOption {
  const char* name;
  bool CudaBackendOptions::*option;
};
constexpr FlagOption kFlagOptions[] = {
    {"LUMEN_CUDA_GRAPHS", &CudaBackendOptions::step_graphs},
    {"LUMEN_CUDA_TREE_ATTENTION", &CudaBackendOptions::tree_attention},
    {"LUMEN_CUDA_QUANTIZED_KV", &CudaBackendOptions::quantized_kv_cache},
    {"LUMEN_CUDA_EXACT_ATTENTION", &CudaBackendOptions::exact_f16_attention},
    {"LUMEN_CUDA_ADD_RMS_NORM", &CudaBackendOptions::fused_add_rms_norm},
    {"LUMEN_CUDA_STATE_SPACE", &CudaBackendOptions::state_space},
    {"LUMEN_CUDA_LATENT_ATTENTION", &CudaBackendOptions::latent_attention},
    {"LUMEN_CUDA_KV_EVICTION", &CudaBackendOptions::kv_eviction},
    {"LUMEN_CUDA_LAYER_NORM", &CudaBackendOptions::layer_norm},
    {"LUMEN_CUDA_ENCODER", &CudaBackendOptions::encoder},
    {"LUMEN_CUDA_ALIBI", &CudaBackendOptions::alibi},
    {"LUMEN_CUDA_BIASED_EXPERTS", &CudaBackendOptions::biased_experts},
    {"LUMEN_CUDA_SPAN_ATTENTION", &CudaBackendOptions::span_attention},
    {"LUMEN_CUDA_ATTENTION_SINKS", &CudaBackendOptions::attention_sinks},
    {"LUMEN_CUDA_RWKV7", &CudaBackendOptions::rwkv7},
    {"LUMEN_CUDA_DEVICE_ARGMAX", &CudaBackendOptions::device_argmax},
    {"LUMEN_CUDA_DEVICE_LEADING", &CudaBackendOptions::device_leading},
    {"LUMEN_CUDA_TENSOR_CORE_PREFILL", &CudaBackendOptions::tensor_core_prefill},
    {"LUMEN_CUDA_FUSED_QUANTIZE", &CudaBackendOptions::fused_input_quantization},
    {"LUMEN_CUDA_ROPE_LOADS_FIRST", &CudaBackendOptions::rope_loads_first},
    {"LUMEN_CUDA_GROUPED_GEMV", &CudaBackendOptions::grouped_gemv},
    {"LUMEN_CUDA_ROPE_STORE_KV", &CudaBackendOptions::fused_rope_store_kv},
    {"LUMEN_CUDA_ROUTED_MOE", &CudaBackendOptions::routed_moe},
    {"LUMEN_CUDA_ENCODER_TENSOR_CORES", &CudaBackendOptions::encoder_tensor_cores},
    {"LUMEN_CUDA_MOE_DEVICE_GEMM", &CudaBackendOptions::moe_device_gemm},
    {"LUMEN_CUDA_INT8_GEMM", &CudaBackendOptions::int8_gemm},
    {"LUMEN_CUDA_DEPENDENT_LAUNCH", &CudaBackendOptions::dependent_launch},
    {"LUMEN_CUDA_FUSED_COMBINE", &CudaBackendOptions::fused_attention_combine},
    {"LUMEN_CUDA_GLU_EPILOGUE", &CudaBackendOptions::glu_epilogue},
};

TEST(CudaEnvironmentOptions, EveryFlagIsListed) {
  ASSERT_EQ(std::size(kFlagOptions), std::size(kFlags));
  for (size_t i = 0; i < std::size(kFlags); ++i) EXPECT_STREQ(kFlagOptions[i].name, kFlags[i]);
}

// Whatever the defaults: unset, a flag leaves the given value; 1 turns its option on from off,
// 0 off from on, and no other option moves.
TEST(CudaEnvironmentOptions, DocumentedValuesApplyAndUnsetOnesLeaveTheGiven) {
  std::vector<std::unique_ptr<ScopedEnv>> unset;
  for (const char* name : kFlags) unset.push_back(std::make_unique<ScopedEnv>(name, nullptr));
  for (const char* name : kValueSwitches) unset.push_back(std::make_unique<ScopedEnv>(name, nullptr));
  CudaBackendOptions given;
  given.max_gemv_tokens = 3;
  EXPECT_EQ(options_with_environment(given).max_gemv_tokens, 3);
  for (const FlagOption& flag : kFlagOptions) {
    for (const bool start : {false, true}) {
      CudaBackendOptions from = given;
      from.*flag.option = start;
      EXPECT_EQ(options_with_environment(from).*flag.option, start) << flag.name << " unset";
      ScopedEnv env(flag.name, start ? "0" : "1");
      const CudaBackendOptions got = options_with_environment(from);
      EXPECT_EQ(got.*flag.option, !start) << flag.name;
      for (const FlagOption& other : kFlagOptions) {
        if (other.option == flag.option) continue;
        EXPECT_EQ(got.*other.option, from.*other.option) << flag.name << " moved " << other.name;
      }
    }
  }
  {
    ScopedEnv tokens("LUMEN_CUDA_MAX_GEMV_TOKENS", "1048576");
    EXPECT_EQ(options_with_environment(given).max_gemv_tokens, 1048576);
    EXPECT_EQ(options_with_environment(given).moe_gemv_macs_per_expert, cuda::kDefaultMoeGemvMacsPerExpert);
  }
  // Each GEMV name and the kernels it picks.
  const std::pair<const char*, GemvKernels> kinds[] = {{"warp", GemvKernels::Warp},
                                                       {"stream", GemvKernels::Stream},
                                                       {"tiled", GemvKernels::Tiled},
                                                       {"pipelined", GemvKernels::Pipelined},
                                                       {"auto", GemvKernels::ByMeasurement}};
  for (const auto& [name, kernels] : kinds) {
    CudaBackendOptions from = given;
    from.gemv = kernels == GemvKernels::Warp ? GemvKernels::Tiled : GemvKernels::Warp;
    ScopedEnv gemv("LUMEN_CUDA_GEMV", name);
    EXPECT_EQ(options_with_environment(from).gemv, kernels) << name;
  }
  {
    ScopedEnv none("LUMEN_CUDA_MOE_GEMV_MACS", "0");
    EXPECT_EQ(options_with_environment(given).moe_gemv_macs_per_expert, 0);
    ScopedEnv all("LUMEN_CUDA_MOE_GEMV_MACS", "9000000000000000000");
    EXPECT_EQ(options_with_environment(given).moe_gemv_macs_per_expert, int64_t{9000000000000000000});
  }
}

}  // namespace
}  // namespace lumen::backend
