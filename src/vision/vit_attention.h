#pragma once
// Full (non-causal) multi-head self-attention over one image's rows, as a ViT needs: every patch
// sees every other. Per head it is two matmuls on the backend (scores = K q, then the softmaxed
// scores times V) around a softmax on host rows, so the heavy part runs on the same kernels and
// thread pool as the projections. The backend's attention op reads a KV cache with a causal
// mask, which a ViT has no use for.
#include <cstdint>

#include "backend/cpu/cpu_backend.h"

namespace lumen::vision {

// q, k, v: {n_head * head_dim, n} f32; out the same shape (may not alias them).
void vit_attention(backend::CpuBackend& backend, const backend::TensorView& q, const backend::TensorView& k,
                   const backend::TensorView& v, int64_t n_head, backend::TensorView& out);

}  // namespace lumen::vision
