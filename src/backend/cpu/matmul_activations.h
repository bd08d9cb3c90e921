#pragma once
// Internal to the CPU matmul (matmul_parts.cc): the activations of one call in the forms its weights'
// kernels read. Weights whose kernels read the same form (same quantizer, activation type and
// width, packed or not) share one copy, quantized once per call into the caller's scratch.
#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_kernels.h"
#include "util/thread_pool.h"

namespace lumen::backend::cpu::detail {

// Activations in the form one target's kernels read. Where they are: scratch.packed_x for packed
// weights, scratch.quantized_x for other quantizing kernels, else x itself (f32 kernels).
struct ActivationForm {
  const TypeKernels* kernels = nullptr;
  const PackedKernels* packed = nullptr;
  int64_t cols = 0;
  size_t xq_offset = 0, xq_stride = 0;  // in scratch.quantized_x
  size_t xp_offset = 0, xp_stride = 0;  // in scratch.packed_x

  bool same_as(const ActivationForm& o) const;
};

struct ActivationForms {
  std::array<ActivationForm, kMaxMatmulTargets> forms;
  std::array<size_t, kMaxMatmulTargets> form_of{};  // per target, its form's index
  size_t n_forms = 0;

  const ActivationForm& of(size_t target) const { return forms[form_of[target]]; }
};

// The forms of `targets` (kernels[i] are target i's, `packed` says whether packed weights take
// the packed path), each quantized from x into `scratch`, which only ever grows.
ActivationForms quantize_activations(std::span<const MatmulTarget> targets, std::span<const TypeKernels* const> kernels,
                                     bool packed, const float* x, int64_t x_stride, int64_t n_tokens, ThreadPool& pool,
                                     MatmulScratch& scratch);

}  // namespace lumen::backend::cpu::detail
