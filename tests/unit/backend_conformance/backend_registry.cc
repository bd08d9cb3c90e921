#include "backend_registry.h"

#include <cstdlib>

#include <fmt/format.h>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/cpu_features.h"
#ifdef LUMEN_HAS_CUDA
#include "backend/cuda/cuda_backend.h"
#endif

namespace lumen::backend::conformance {

namespace {

// The CPU runs at the level LUMEN_ISA selects (read once per process; ctest runs the suite
// once per level). A level above what this CPU has would silently run a lower one: skip it.
std::string cpu_unavailable() {
  const char* requested = std::getenv("LUMEN_ISA");
  if (requested == nullptr) return {};
  const auto isa = cpu::isa_from_name(requested);
  if (!isa) return fmt::format("LUMEN_ISA level unavailable: '{}' is not scalar, avx2 or avx512", requested);
  if (*isa > cpu::detected_isa()) {
    return fmt::format("LUMEN_ISA level unavailable: LUMEN_ISA={} but this CPU supports only {}", requested,
                       cpu::isa_name(cpu::detected_isa()));
  }
  return {};
}

BackendEntry cpu_entry() {
  return {"cpu", cpu_unavailable,
          // Three threads, so even small shapes are split over the pool.
          [] { return std::make_unique<CpuBackend>(3); }, [](const Case&) { return true; }};
}

// The CPU backend with moe_ffn composed from its own ops (common/composed_moe_ffn.h), as the
// CUDA backend runs it: the moe_ffn rows hold the composition to the same reference. Its other
// rows would repeat the plain CPU entry's.
BackendEntry cpu_composed_entry() {
  return {"cpu_composed", cpu_unavailable,
          [] {
            auto cpu = std::make_unique<CpuBackend>(3);
            cpu->set_composed_ops(true);
            return cpu;
          },
          [](const Case& c) { return c.op == Op::kMoeFfn; }};
}

#ifdef LUMEN_HAS_CUDA
// As the backend the entry makes reads it (LUMEN_CUDA_QUANTIZED_KV).
bool quantized_kv_declared() { return options_with_environment({}).quantized_kv_cache; }
// As the backend the entry makes reads it (LUMEN_CUDA_STATE_SPACE).
bool state_space_declared() { return options_with_environment({}).state_space; }
// As the backend the entry makes reads it (LUMEN_CUDA_LATENT_ATTENTION).
bool latent_attention_declared() { return options_with_environment({}).latent_attention; }
// As the backend the entry makes reads them (LUMEN_CUDA_ALIBI, LUMEN_CUDA_SPAN_ATTENTION).
bool alibi_declared() { return options_with_environment({}).alibi; }
bool span_attention_declared() { return options_with_environment({}).span_attention; }
// As the backend the entry makes reads it (LUMEN_CUDA_ATTENTION_SINKS).
bool attention_sinks_declared() { return options_with_environment({}).attention_sinks; }

// The CUDA kernels handle every weight type the CPU multiplies and every table type get_rows
// converts (gemv_activation_type in gemv.cu, rows_supported in rows.cu): the table's type lists.
bool cuda_supports(const Case& c) {
  switch (c.op) {
    case Op::kMatmul:
    case Op::kMatmulSameInput:
    case Op::kMatmulGlu:
    case Op::kGetRows: return true;
    case Op::kMoeFfn: return true;  // composed from the ops above (common/composed_moe_ffn.h)
    case Op::kSsmConv:
    case Op::kSsmScan: return state_space_declared();  // ssm.cu, declared for a GPU run checking it
    case Op::kKvBlocks: return true;  // byte copies: every cache type
    case Op::kStoreKv:
    case Op::kAttention:  // CudaBackend::do_supports_kv_type's cache types
      if (c.mode == static_cast<int>(AttentionMode::kAlibi) && !alibi_declared()) return false;
      if (c.mode == static_cast<int>(AttentionMode::kSpan) && !span_attention_declared()) return false;
      if (c.mode == static_cast<int>(AttentionMode::kAlibiSpan) && !(alibi_declared() && span_attention_declared()))
        return false;
      if ((c.mode == static_cast<int>(AttentionMode::kSinks) ||
           c.mode == static_cast<int>(AttentionMode::kWindowSinks)) &&
          !attention_sinks_declared()) {
        return false;
      }
      if (c.mode == static_cast<int>(AttentionMode::kLatent)) return latent_attention_declared();
      // q8_0 and q4_0 only where LUMEN_CUDA_QUANTIZED_KV=1 declares them (a GPU run checking them).
      return (c.type != tensor::DType::Q8_0 && c.type != tensor::DType::Q4_0) || quantized_kv_declared();
    default: return true;
  }
}

// The kernels held to the scalar references: the attention paths on the tensor cores (f16
// queries, keys and probabilities) are off here and checked by their own tests against the CPU
// (CudaTensorCorePrefill, CudaEncoderTensorCores: 2e-3), as the bidirectional rows failed with
// them on an H200.
BackendEntry cuda_entry() {
  return {"cuda", [] { return cuda_device_count() > 0 ? std::string() : std::string("no CUDA device"); },
          [] {
            CudaBackendOptions options;
            options.tensor_core_prefill = false;
            options.encoder_tensor_cores = false;
            return make_cuda_backend(0, options);
          },
          cuda_supports};
}
#endif

}  // namespace

const std::vector<BackendEntry>& backends() {
  static const std::vector<BackendEntry> entries = {
      cpu_entry(),
      cpu_composed_entry(),
#ifdef LUMEN_HAS_CUDA
      cuda_entry(),
#endif
  };
  return entries;
}

}  // namespace lumen::backend::conformance
