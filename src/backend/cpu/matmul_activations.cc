#include "backend/cpu/matmul_activations.h"

#include <algorithm>

#include "backend/cpu/matmul_packed.h"
#include "tensor/dtype.h"

namespace lumen::backend::cpu::detail {

namespace {

constexpr int64_t kQuantizeTaskTokens = 16;

void quantize_form(const ActivationForm& form, const float* x, int64_t x_stride, int64_t n_tokens, ThreadPool& pool,
                   MatmulScratch& scratch) {
  uint8_t* dst = scratch.quantized_x.data() + form.xq_offset;
  uint8_t* packed_dst = scratch.packed_x.data() + form.xp_offset;
  // Packed weights read only the packed rows (every target sharing a form is packed or none is).
  const auto quantize_tokens = [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      if (form.packed != nullptr) {
        form.packed->quantize_packed(x + t * x_stride, packed_dst + static_cast<size_t>(t) * form.xp_stride, form.cols);
      } else {
        form.kernels->quantize(x + t * x_stride, dst + static_cast<size_t>(t) * form.xq_stride, form.cols);
      }
    }
  };
  if (pool.size() > 1 && n_tokens >= 2) {
    // From two tokens on, the threads share the work: the activations were just written by
    // all of them (the previous op's outputs), so one thread alone would also wait on the
    // other cores' caches for most of them. Profiled on a 6-row speculative verification step
    // of SmolLM2: 5-10 us per matmul before the workers started, a tenth of the step.
    const int64_t per_task = std::clamp<int64_t>(n_tokens / static_cast<int64_t>(pool.size()), 1, kQuantizeTaskTokens);
    const auto* qt = &quantize_tokens;
    pool.parallel_for((n_tokens + per_task - 1) / per_task, [qt, n_tokens, per_task](int64_t task, unsigned) {
      const int64_t begin = task * per_task;
      (*qt)(begin, std::min(n_tokens, begin + per_task));
    });
  } else {
    quantize_tokens(0, n_tokens);
  }
}

}  // namespace

bool ActivationForm::same_as(const ActivationForm& o) const {
  return cols == o.cols && kernels->quantize == o.kernels->quantize && kernels->act_type == o.kernels->act_type &&
         (packed == nullptr) == (o.packed == nullptr) &&
         (packed == nullptr || packed->quantize_packed == o.packed->quantize_packed);
}

ActivationForms quantize_activations(std::span<const MatmulTarget> targets, std::span<const TypeKernels* const> kernels,
                                     bool packed, const float* x, int64_t x_stride, int64_t n_tokens, ThreadPool& pool,
                                     MatmulScratch& scratch) {
  ActivationForms forms;
  size_t xq_bytes = 0, xp_bytes = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    const WeightMatrix& w = *targets[i].w;
    ActivationForm form;
    form.kernels = kernels[i];
    form.packed = w.packed != nullptr && packed ? packed_kernels(w.type) : nullptr;
    form.cols = w.cols;
    size_t f = 0;
    while (f < forms.n_forms && !forms.forms[f].same_as(form)) ++f;
    forms.form_of[i] = f;
    if (f < forms.n_forms) continue;
    if (form.kernels->quantize != nullptr && form.packed == nullptr) {
      form.xq_offset = xq_bytes;
      form.xq_stride = static_cast<size_t>(*tensor::row_bytes(form.kernels->act_type, w.cols));
      xq_bytes += form.xq_stride * static_cast<size_t>(n_tokens);
    }
    if (form.packed != nullptr) {
      form.xp_offset = xp_bytes;
      form.xp_stride = packed_activation_bytes(w.cols, form.packed->extra_words);
      xp_bytes += form.xp_stride * static_cast<size_t>(n_tokens);
    }
    forms.forms[forms.n_forms++] = form;
  }
  if (scratch.quantized_x.size() < xq_bytes) scratch.quantized_x.resize(xq_bytes);
  if (scratch.packed_x.size() < xp_bytes) scratch.packed_x.resize(xp_bytes);
  for (size_t f = 0; f < forms.n_forms; ++f) {
    if (forms.forms[f].kernels->quantize != nullptr)
      quantize_form(forms.forms[f], x, x_stride, n_tokens, pool, scratch);
  }
  return forms;
}

}  // namespace lumen::backend::cpu::detail
