#include "backend/common/attention_checks.h"

#include <cmath>
#include <utility>

#include "backend/common/kv_checks.h"
#include "util/error.h"

namespace lumen::backend::common {

namespace {

// Spans that attend both ways (SequenceSlice::key_ends): each row sees at least itself and
// nothing past the slice, and never together with a tree mask.
void check_key_ends(const SequenceSlice& seq) {
  if (seq.key_ends.empty()) return;
  if (!seq.visible.empty()) fail("attention: a slice with both a tree mask and key ends");
  if (std::ssize(seq.key_ends) != seq.n_tokens) {
    fail("attention: {} key ends for a slice of {} rows", seq.key_ends.size(), seq.n_tokens);
  }
  for (int64_t i = 0; i < seq.n_tokens; ++i) {
    const int64_t end = seq.key_ends[static_cast<size_t>(i)];
    if (end < seq.start_pos + i + 1 || end > seq.start_pos + seq.n_tokens) {
      fail("attention: row {} sees keys up to {}, outside [{}, {}]", i, end, seq.start_pos + i + 1,
           seq.start_pos + seq.n_tokens);
    }
  }
}

}  // namespace

void check_attention_inputs(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                            const AttentionConfig& cfg, const TensorView& out) {
  if (cfg.head_dim <= 0 || cfg.n_heads <= 0 || cfg.n_kv_heads <= 0 || cfg.n_heads % cfg.n_kv_heads != 0) {
    fail("attention: need positive head_dim and n_heads a multiple of n_kv_heads (got {}, {}, {})", cfg.head_dim,
         cfg.n_heads, cfg.n_kv_heads);
  }
  if (cfg.sliding_window < 0 || !std::isfinite(cfg.scale) || !std::isfinite(cfg.softcap) || cfg.softcap < 0.0f) {
    fail("attention: invalid sliding window, scale or softcap");
  }
  if (!std::isfinite(cfg.alibi_max_bias) || cfg.alibi_max_bias < 0.0f) {
    fail("attention: ALiBi max bias {} must be finite and not negative", cfg.alibi_max_bias);
  }
  const int64_t value_dim = attention_value_dim(cfg);
  if (value_dim <= 0) fail("attention: value_dim {} must be positive", cfg.value_dim);
  for (const auto& [t, width] : {std::pair{&q, cfg.head_dim}, std::pair{&out, value_dim}}) {
    if (t->type != tensor::DType::F32 || t->dims[0] != width || t->dims[1] != cfg.n_heads ||
        t->row_bytes < static_cast<size_t>(width) * sizeof(float) || t->row_bytes % sizeof(float) != 0 ||
        t->data == nullptr) {
      fail("attention: q and out must be f32 {{head_dim {} (out: value_dim {}), n_heads {}, tokens}}", cfg.head_dim,
           value_dim, cfg.n_heads);
    }
  }
  if (q.rows() != out.rows()) fail("attention: q and out hold different token counts");
  check_kv_layer(cache, cfg.head_dim * cfg.n_kv_heads, "attention", value_dim * cfg.n_kv_heads);
  for (const auto& [t, width] : {std::pair{&cache.k, cfg.head_dim}, std::pair{&cache.v, value_dim}}) {
    const tensor::DTypeInfo& info = tensor::dtype_info(t->type);
    if (info.block_elements == 1 && t->row_bytes % info.block_bytes != 0) {
      fail("attention: cache rows are not aligned to their element size");
    }
    // A head reads its own slice of each row, which must start at a block boundary.
    if (width % info.block_elements != 0) {
      fail("attention: heads of {} values are not whole {} blocks of {}", width, info.name, info.block_elements);
    }
  }
  check_sequences(seqs, q.rows() / cfg.n_heads, cache, "attention");
  for (const SequenceSlice& seq : seqs) {
    check_key_ends(seq);
    if (seq.visible.empty()) {
      if (!seq.positions.empty()) fail("attention: row positions without a tree mask");
      continue;
    }
    const auto n = static_cast<size_t>(seq.n_tokens);
    if (seq.visible.size() != n * n) {
      fail("attention: a tree mask of {} flags for a slice of {} rows", seq.visible.size(), seq.n_tokens);
    }
    if (!seq.positions.empty()) {
      if (seq.positions.size() != n) fail("attention: {} row positions for a slice of {} rows", seq.positions.size(), n);
      for (size_t i = 0; i < n; ++i) {
        const int64_t p = seq.positions[i];
        if (p < seq.start_pos || p > seq.start_pos + static_cast<int64_t>(i)) {
          fail("attention: tree row {} at position {}, outside [{}, {}]", i, p, seq.start_pos,
               seq.start_pos + static_cast<int64_t>(i));
        }
      }
    }
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = i + 1; j < n; ++j) {
        if (seq.visible[i * n + j] != 0) fail("attention: tree mask row {} sees the later row {}", i, j);
      }
    }
  }
}

}  // namespace lumen::backend::common
