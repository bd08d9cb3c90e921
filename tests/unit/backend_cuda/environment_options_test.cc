// options_with_environment (cuda_backend_env.cc): the LUMEN_CUDA_* switches an operator sets for
// A/B runs. Each takes only its documented values; anything else is refused at start, naming
// the variable, and never half-applied. Needs no device.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "util/error.h"

namespace lumen::backend {
namespace {

// Sets `name` to `value` (or unsets it, for a null value) for the scope, then puts back what was
// there: a checking run (gpu_check.sh unverified) sets some of these switches for the whole binary.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* before = std::getenv(name); before != nullptr) before_ = before;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (before_) {
      setenv(name_, before_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> before_;
};

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
                                  "LUMEN_CUDA_MOE_DEVICE_GEMM"};
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

TEST(CudaEnvironmentOptions, DocumentedValuesApplyAndUnsetOnesLeaveTheGiven) {
  std::vector<std::unique_ptr<ScopedEnv>> unset;
  for (const char* name : kFlags) unset.push_back(std::make_unique<ScopedEnv>(name, nullptr));
  for (const char* name : kValueSwitches) unset.push_back(std::make_unique<ScopedEnv>(name, nullptr));
  CudaBackendOptions given;
  given.max_gemv_tokens = 3;
  EXPECT_EQ(options_with_environment(given).max_gemv_tokens, 3);
  EXPECT_FALSE(options_with_environment(given).step_graphs);
  {
    ScopedEnv tokens("LUMEN_CUDA_MAX_GEMV_TOKENS", "1048576");
    ScopedEnv graphs("LUMEN_CUDA_GRAPHS", "1");
    const CudaBackendOptions got = options_with_environment(given);
    EXPECT_EQ(got.max_gemv_tokens, 1048576);
    EXPECT_TRUE(got.step_graphs);
    EXPECT_FALSE(got.tree_attention);
    EXPECT_FALSE(got.state_space);
  }
  {
    ScopedEnv state_space("LUMEN_CUDA_STATE_SPACE", "1");
    EXPECT_TRUE(options_with_environment(given).state_space);
    EXPECT_FALSE(options_with_environment(given).latent_attention);
    EXPECT_FALSE(options_with_environment(given).kv_eviction);
  }
  {
    ScopedEnv layer_norm("LUMEN_CUDA_LAYER_NORM", "1");
    ScopedEnv span("LUMEN_CUDA_SPAN_ATTENTION", "1");
    const CudaBackendOptions got = options_with_environment(given);
    EXPECT_TRUE(got.layer_norm);
    EXPECT_TRUE(got.span_attention);
    EXPECT_FALSE(got.encoder);
    EXPECT_FALSE(got.alibi);
    EXPECT_FALSE(got.rwkv7);
    EXPECT_FALSE(got.device_argmax);
    EXPECT_FALSE(got.device_leading);
  }
  {
    ScopedEnv argmax("LUMEN_CUDA_DEVICE_ARGMAX", "1");
    EXPECT_TRUE(options_with_environment(given).device_argmax);
  }
  {
    ScopedEnv leading("LUMEN_CUDA_DEVICE_LEADING", "1");
    EXPECT_TRUE(options_with_environment(given).device_leading);
    EXPECT_FALSE(options_with_environment(given).tensor_core_prefill);
  }
  {
    ScopedEnv prefill("LUMEN_CUDA_TENSOR_CORE_PREFILL", "1");
    EXPECT_TRUE(options_with_environment(given).tensor_core_prefill);
    EXPECT_FALSE(options_with_environment(given).fused_input_quantization);
  }
  {
    ScopedEnv fused("LUMEN_CUDA_FUSED_QUANTIZE", "1");
    EXPECT_TRUE(options_with_environment(given).fused_input_quantization);
    EXPECT_FALSE(options_with_environment(given).rope_loads_first);
  }
  {
    ScopedEnv rope("LUMEN_CUDA_ROPE_LOADS_FIRST", "1");
    EXPECT_TRUE(options_with_environment(given).rope_loads_first);
    EXPECT_FALSE(options_with_environment(given).grouped_gemv);
  }
  {
    ScopedEnv grouped("LUMEN_CUDA_GROUPED_GEMV", "1");
    EXPECT_TRUE(options_with_environment(given).grouped_gemv);
    EXPECT_FALSE(options_with_environment(given).fused_rope_store_kv);
  }
  {
    ScopedEnv fused("LUMEN_CUDA_ROPE_STORE_KV", "1");
    EXPECT_TRUE(options_with_environment(given).fused_rope_store_kv);
    EXPECT_FALSE(options_with_environment(given).routed_moe);
  }
  {
    ScopedEnv routed("LUMEN_CUDA_ROUTED_MOE", "1");
    EXPECT_TRUE(options_with_environment(given).routed_moe);
    EXPECT_EQ(options_with_environment(given).moe_gemv_macs_per_expert, cuda::kDefaultMoeGemvMacsPerExpert);
    EXPECT_FALSE(options_with_environment(given).encoder_tensor_cores);
  }
  {
    ScopedEnv tensor_cores("LUMEN_CUDA_ENCODER_TENSOR_CORES", "1");
    EXPECT_TRUE(options_with_environment(given).encoder_tensor_cores);
    EXPECT_FALSE(options_with_environment(given).encoder);
    EXPECT_FALSE(options_with_environment(given).moe_device_gemm);
  }
  {
    ScopedEnv gemm("LUMEN_CUDA_MOE_DEVICE_GEMM", "1");
    EXPECT_TRUE(options_with_environment(given).moe_device_gemm);
    EXPECT_FALSE(options_with_environment(given).routed_moe);
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
