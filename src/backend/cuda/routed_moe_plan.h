#pragma once
// Which way CudaBackend::moe_ffn_routed runs a batch's routed experts (cuda_routed_moe.cc). Plain
// C++, so tests/unit/cuda_host checks the choice without CUDA's headers.
//
// Two ways:
// - ExpertGemv: the (token, slot) pairs grouped by expert on the device, then the expert GEMV
//   (gemv_experts.cu): six launches a layer whatever the batch, and no id leaves the device.
//   Each expert's rows are read once per 8 of its pairs, on the CUDA cores (dp4a).
// - HostGrouped: the ids copied to the host (one wait a layer), grouped there, and each chosen
//   expert run through the backend's matmuls: past max_gemv_tokens rows those are f16 tensor-core
//   GEMMs, several times the GEMV's multiply-adds a second, but about ten launches and some 40 us
//   of host work per chosen expert.
// - ExpertGemm (CudaBackendOptions::moe_device_gemm): the device's grouping, then a tensor-core
//   GEMM over the groups (gemm_experts.cu) that stages each expert's weights in f16 as the host
//   way's GEMMs do: the host way's arithmetic in seven launches a layer, no id to the host.
// A decode-sized batch always takes the GEMV (a CUDA graph needs it). A prompt takes it while the
// GEMV's extra time on an expert's multiply-adds stays under the other way's cost per expert:
// many small experts (Qwen3-MoE: 128 of 2048 x 768; a 512-token prompt gives each about 32
// pairs, 150 M multiply-adds) run on the GEMV, few large ones (Mixtral: 8 of 4096 x 14336, 176 M
// multiply-adds a pair) on the GEMMs.
#include <climits>
#include <cstdint>

namespace lumen::backend::cuda {

// Up to this many tokens the routed experts always run on the expert GEMV.
inline constexpr int64_t kMaxDeviceMoeTokens = 64;
// The most experts the device groups pairs for (a shared-memory count per expert).
inline constexpr int64_t kMaxDeviceRoutedExperts = 1024;
// CudaBackendOptions::moe_gemv_macs_per_expert's default: about where the rough model above puts
// the crossing, assuming 40 us a chosen expert on the host way and a GEMV 6x slower a multiply-add
// than the GEMMs. A GPU run must measure it (scripts/gpu_check.sh moe: prefill both ways).
inline constexpr int64_t kDefaultMoeGemvMacsPerExpert = int64_t{1} << 29;

enum class RoutedExpertsPath : uint8_t { ExpertGemv, ExpertGemm, HostGrouped };

struct RoutedExpertsBatch {
  int64_t tokens = 0;
  int64_t used = 0;  // experts a token
  int64_t n_experts = 0;
  int64_t cols = 0;         // the layer's width (x's and the output's rows)
  int64_t ff = 0;           // an expert's hidden width
  bool gemv_types = false;  // quantized experts the GEMV reads, gate and up of one type, packed rows
  bool gemm_types = false;  // experts the GEMM stages (expert_gemm::stages_type), cols and ff multiples of 32
};

// The way for this batch: the GEMV for decode-sized batches, and for larger ones while an
// expert's average share of the batch's multiply-adds (gate, up and down of each pair) is at most
// gemv_macs_per_expert; past that, the device GEMM where it is on (device_gemm) and stages the
// experts' types; the host way for the rest, and for experts the device cannot group.
inline RoutedExpertsPath choose_routed_experts_path(const RoutedExpertsBatch& b, int64_t gemv_macs_per_expert,
                                                    bool device_gemm = false) {
  // The device numbers the pairs in int32.
  const bool numbered = b.used > 0 && b.tokens <= int64_t{INT32_MAX} / b.used;
  if (b.n_experts > kMaxDeviceRoutedExperts || b.n_experts <= 0 || !numbered) return RoutedExpertsPath::HostGrouped;
  const bool gemm = device_gemm && b.gemm_types && b.tokens > kMaxDeviceMoeTokens;
  if (!b.gemv_types) return gemm ? RoutedExpertsPath::ExpertGemm : RoutedExpertsPath::HostGrouped;
  if (b.tokens <= kMaxDeviceMoeTokens) return RoutedExpertsPath::ExpertGemv;
  // In double: tokens x used x cols x ff can pass 2^63 for a long prompt of a wide model.
  const double macs_per_expert = static_cast<double>(b.tokens) * static_cast<double>(b.used) * 3.0 *
                                 static_cast<double>(b.cols) * static_cast<double>(b.ff) /
                                 static_cast<double>(b.n_experts);
  if (macs_per_expert <= static_cast<double>(gemv_macs_per_expert)) return RoutedExpertsPath::ExpertGemv;
  return gemm ? RoutedExpertsPath::ExpertGemm : RoutedExpertsPath::HostGrouped;
}

}  // namespace lumen::backend::cuda
