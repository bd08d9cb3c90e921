#include <charconv>
#include <cstdlib>
#include <string_view>

#include "backend/cuda/cuda_backend.h"
#include "util/error.h"

namespace lumen::backend {

CudaBackendOptions options_with_environment(CudaBackendOptions options) {
  if (const char* gemv = std::getenv("LUMEN_CUDA_GEMV"); gemv != nullptr) {
    const std::string_view kind(gemv);
    if (kind != "stream" && kind != "warp" && kind != "tiled" && kind != "pipelined" && kind != "auto")
      fail("LUMEN_CUDA_GEMV must be 'stream', 'warp', 'tiled', 'pipelined' or 'auto', not '{}'", kind);
    options.gemv = kind == "stream"      ? GemvKernels::Stream
                   : kind == "warp"      ? GemvKernels::Warp
                   : kind == "tiled"     ? GemvKernels::Tiled
                   : kind == "pipelined" ? GemvKernels::Pipelined
                                         : GemvKernels::ByMeasurement;
  }
  if (const char* tokens = std::getenv("LUMEN_CUDA_MAX_GEMV_TOKENS"); tokens != nullptr) {
    const std::string_view value(tokens);
    int64_t n = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (error != std::errc{} || end != value.data() + value.size() || n < 1 || n > (int64_t{1} << 20)) {
      fail("LUMEN_CUDA_MAX_GEMV_TOKENS must be a number of tokens from 1 to 1048576, not '{}'", value);
    }
    options.max_gemv_tokens = n;
  }
  if (const char* macs = std::getenv("LUMEN_CUDA_MOE_GEMV_MACS"); macs != nullptr) {
    const std::string_view value(macs);
    int64_t n = 0;
    const auto [end, error] = std::from_chars(value.data(), value.data() + value.size(), n);
    if (error != std::errc{} || end != value.data() + value.size() || n < 0) {
      fail("LUMEN_CUDA_MOE_GEMV_MACS must be a number of multiply-adds from 0 up, not '{}'", value);
    }
    options.moe_gemv_macs_per_expert = n;
  }
  const auto flag = [](const char* name, bool& option) {
    if (const char* given = std::getenv(name); given != nullptr) {
      const std::string_view value(given);
      if (value != "0" && value != "1") fail("{} must be 0 or 1, not '{}'", name, value);
      option = value == "1";
    }
  };
  flag("LUMEN_CUDA_EXACT_ATTENTION", options.exact_f16_attention);
  flag("LUMEN_CUDA_ADD_RMS_NORM", options.fused_add_rms_norm);
  flag("LUMEN_CUDA_GRAPHS", options.step_graphs);
  flag("LUMEN_CUDA_TREE_ATTENTION", options.tree_attention);
  flag("LUMEN_CUDA_QUANTIZED_KV", options.quantized_kv_cache);
  flag("LUMEN_CUDA_STATE_SPACE", options.state_space);
  flag("LUMEN_CUDA_LATENT_ATTENTION", options.latent_attention);
  flag("LUMEN_CUDA_KV_EVICTION", options.kv_eviction);
  flag("LUMEN_CUDA_LAYER_NORM", options.layer_norm);
  flag("LUMEN_CUDA_ENCODER", options.encoder);
  flag("LUMEN_CUDA_ENCODER_TENSOR_CORES", options.encoder_tensor_cores);
  flag("LUMEN_CUDA_ALIBI", options.alibi);
  flag("LUMEN_CUDA_SPAN_ATTENTION", options.span_attention);
  flag("LUMEN_CUDA_ATTENTION_SINKS", options.attention_sinks);
  flag("LUMEN_CUDA_RWKV7", options.rwkv7);
  flag("LUMEN_CUDA_BIASED_EXPERTS", options.biased_experts);
  flag("LUMEN_CUDA_DEVICE_ARGMAX", options.device_argmax);
  flag("LUMEN_CUDA_DEVICE_LEADING", options.device_leading);
  flag("LUMEN_CUDA_TENSOR_CORE_PREFILL", options.tensor_core_prefill);
  flag("LUMEN_CUDA_FUSED_QUANTIZE", options.fused_input_quantization);
  flag("LUMEN_CUDA_ROPE_LOADS_FIRST", options.rope_loads_first);
  flag("LUMEN_CUDA_GROUPED_GEMV", options.grouped_gemv);
  flag("LUMEN_CUDA_ROPE_STORE_KV", options.fused_rope_store_kv);
  flag("LUMEN_CUDA_ROUTED_MOE", options.routed_moe);
  flag("LUMEN_CUDA_MOE_DEVICE_GEMM", options.moe_device_gemm);
  flag("LUMEN_CUDA_INT8_GEMM", options.int8_gemm);
  flag("LUMEN_CUDA_DEPENDENT_LAUNCH", options.dependent_launch);
  flag("LUMEN_CUDA_FUSED_COMBINE", options.fused_attention_combine);
  flag("LUMEN_CUDA_GLU_EPILOGUE", options.glu_epilogue);
  return options;
}

}  // namespace lumen::backend
