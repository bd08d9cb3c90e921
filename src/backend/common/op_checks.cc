#include "backend/common/op_checks.h"

#include <utility>

#include "backend/common/get_rows_check.h"
#include "backend/common/kv_checks.h"
#include "util/checked_math.h"
#include "util/error.h"

namespace lumen::backend::common {

void check_f32(const TensorView& t, int64_t cols, std::string_view op, std::string_view name) {
  if (t.type != tensor::DType::F32 || t.dims[0] != cols || t.data == nullptr ||
      t.row_bytes < static_cast<size_t>(cols) * sizeof(float) || t.row_bytes % sizeof(float) != 0 || t.rows() < 0) {
    fail("{}: {} must be f32 with rows of {} values", op, name, cols);
  }
}

void check_same_shape(const TensorView& a, const TensorView& b, std::string_view op) {
  check_f32(b, a.dims[0], op, "operands");
  if (a.rows() != b.rows()) fail("{}: operands hold {} and {} rows", op, a.rows(), b.rows());
}

void check_upload(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) {
  if (!tensor::row_bytes(type, dims[0]) || host_data == nullptr) {
    fail("upload_weights: rows of {} {} values are not a whole number of blocks", dims[0], tensor::dtype_name(type));
  }
}

void check_matmul(const TensorView& w, const TensorView& x, const TensorView& y) {
  if (w.dims[2] * w.dims[3] != 1) fail("matmul: weights must be 2-D");
  check_f32(x, w.dims[0], "matmul", "x");
  check_f32(y, w.dims[1], "matmul", "y");
  if (x.rows() != y.rows()) fail("matmul: x has {} rows, y {}", x.rows(), y.rows());
}

void check_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, const TensorView& out) {
  check_f32(x, x.dims[0], "moe_ffn", "x");
  check_same_shape(x, out, "moe_ffn");
  if (x.data == out.data) fail("moe_ffn: out may not alias x");
  for (const ExpertWork& e : experts) {
    if (e.gate == nullptr || e.up == nullptr || e.down == nullptr) fail("moe_ffn: an expert without its matrices");
    for (const TensorView* w : {e.gate, e.up, e.down}) {
      if (w->dims[2] * w->dims[3] != 1) fail("moe_ffn: weights must be 2-D");
    }
    const std::pair<const TensorView*, int64_t> biases[] = {
        {e.gate_bias, e.gate->dims[1]}, {e.up_bias, e.up->dims[1]}, {e.down_bias, e.down->dims[1]}};
    for (const auto& [bias, width] : biases) {
      if (bias != nullptr &&
          (bias->type != tensor::DType::F32 || bias->elements() != width || bias->dims[0] != width)) {
        fail("moe_ffn: an expert bias of {} values for a matrix of {} rows", bias->elements(), width);
      }
    }
  }
}

void check_get_rows_ids(const TensorView& table, std::span<const int32_t> ids, const TensorView& out) {
  check_get_rows(table, static_cast<int64_t>(ids.size()), out);
  for (const int32_t id : ids) {
    if (id < 0 || id >= table.rows()) fail("get_rows: id {} is not in [0, {})", id, table.rows());
  }
}

void check_rotate_heads(const TensorView& x, int64_t head_dim) {
  check_f32(x, x.dims[0], "rotate_heads", "x");
  if (head_dim <= 0 || !is_power_of_two(static_cast<uint64_t>(head_dim)) || x.dims[0] % head_dim != 0) {
    fail("rotate_heads: head_dim {} is not a power of two dividing the row of {}", head_dim, x.dims[0]);
  }
}

void check_rope(const TensorView& x, std::span<const int32_t> positions) {
  check_f32(x, x.dims[0], "rope", "x");
  const int64_t tokens = x.dims[2] * x.dims[3];
  if (static_cast<int64_t>(positions.size()) != tokens) {
    fail("rope: {} positions for {} tokens", positions.size(), tokens);
  }
}

void check_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                    const KvLayer& cache) {
  check_f32(k, k.dims[0], "store_kv", "k");
  check_same_shape(k, v, "store_kv");
  // Values that are a view of the keys (latent attention) are narrower than k's rows.
  check_kv_layer(cache, k.dims[0], "store_kv", values_in_keys(cache) ? cache.v.dims[0] : v.dims[0]);
  check_sequences(seqs, k.rows(), cache, "store_kv");
}

bool rows_overlap(const TensorView& a, const TensorView& b) {
  if (a.rows() == 0 || b.rows() == 0) return false;
  const auto* a_begin = static_cast<const char*>(a.data);
  const auto* b_begin = static_cast<const char*>(b.data);
  const auto bytes = [](const TensorView& t) { return static_cast<size_t>(t.rows()) * t.row_bytes; };
  return a_begin < b_begin + bytes(b) && b_begin < a_begin + bytes(a);
}

bool values_overlap(const TensorView& a, const TensorView& b) {
  const auto span = [](const TensorView& t) {
    const auto* begin = static_cast<const char*>(t.data);
    if (t.rows() == 0) return std::pair{begin, begin};
    const size_t last = static_cast<size_t>(t.rows() - 1) * t.row_bytes;
    return std::pair{begin, begin + last + static_cast<size_t>(t.dims[0]) * sizeof(float)};
  };
  const auto [a0, a1] = span(a);
  const auto [b0, b1] = span(b);
  return a0 < b1 && b0 < a1;
}

TensorView token_rows(const TensorView& heads) {
  TensorView rows = heads;
  rows.dims = {heads.dims[0] * heads.dims[1], heads.dims[2] * heads.dims[3], 1, 1};
  rows.row_bytes = heads.row_bytes * static_cast<size_t>(heads.dims[1]);
  return rows;
}

void check_rope_store_kv(const TensorView& q, const TensorView& k, const TensorView& v,
                         std::span<const int32_t> positions, std::span<const SequenceSlice> seqs,
                         const KvLayer& cache) {
  check_rope(q, positions);
  check_rope(k, positions);
  // One rotation table serves both (a backend builds it once per token).
  if (q.dims[0] != k.dims[0]) fail("rope_store_kv: q's heads have {} values, k's {}", q.dims[0], k.dims[0]);
  if (k.row_bytes != static_cast<size_t>(k.dims[0]) * sizeof(float)) {
    fail("rope_store_kv: k's heads must be contiguous ({} bytes apart, a head is {})", k.row_bytes,
         k.dims[0] * static_cast<int64_t>(sizeof(float)));
  }
  check_store_kv(token_rows(k), v, seqs, cache);
  // The fused pass rotates q and k and reads k and v in one go: memory shared between them
  // would be read before or after it is rotated depending on the backend's order.
  if (rows_overlap(q, k) || rows_overlap(q, v) || (!values_in_keys(cache) && rows_overlap(k, v))) {
    fail("rope_store_kv: q, k and v may not overlap");
  }
}

void check_kv_block(const KvLayer& cache, int64_t block, std::string_view op) {
  const int64_t n_blocks = cache.k.dims[2] * cache.k.dims[3];
  if (block < 0 || block >= n_blocks) fail("{}: block id {} is not in [0, {})", op, block, n_blocks);
}

void check_kv_rows(const KvLayer& cache, int64_t src, int64_t dst) {
  const int64_t n_rows = cache.k.dims[2] * cache.k.dims[3] * cache.block_size;
  if (src < 0 || src >= n_rows || dst < 0 || dst >= n_rows) {
    fail("copy_kv_row: rows {} and {} must be in [0, {})", src, dst, n_rows);
  }
}

void check_shift_keys(const KvLayer& cache, std::span<const int32_t> blocks, int64_t head_dim) {
  const int64_t row = cache.k.dims[0];
  check_kv_layer(cache, row, "shift_keys");
  if (head_dim <= 0 || row % head_dim != 0) fail("shift_keys: head_dim {} does not divide the K row {}", head_dim, row);
  for (const int32_t block : blocks) check_kv_block(cache, block, "shift_keys");
}

void check_step(const StepMetadata& step) {
  if (step.positions.size() != step.tokens.size()) {
    fail("begin_step: {} positions for {} tokens", step.positions.size(), step.tokens.size());
  }
  for (const int32_t row : step.logit_rows) {
    if (row < 0 || static_cast<size_t>(row) >= step.tokens.size()) {
      fail("begin_step: logit row {} is not in [0, {})", row, step.tokens.size());
    }
  }
  if (step.logits != nullptr && step.logit_width <= 0) fail("begin_step: logits without a row width");
  if (!step.row_forms.empty()) {
    if (step.row_forms.size() != step.logit_rows.size()) {
      fail("begin_step: {} row forms for {} logit rows", step.row_forms.size(), step.logit_rows.size());
    }
    if (step.logits == nullptr) fail("begin_step: row forms without logits");
    for (const uint8_t form : step.row_forms) {
      if (form > static_cast<uint8_t>(RowForm::Leading)) fail("begin_step: row form {} is none of the three", form);
      if (form == static_cast<uint8_t>(RowForm::Argmax) && step.argmax == nullptr)
        fail("begin_step: argmax rows without their host entries");
      if (form == static_cast<uint8_t>(RowForm::Leading) && step.leading == nullptr)
        fail("begin_step: leading-candidate rows without their host entries");
    }
  }
  if (!step.leading_scale.empty() && step.leading_scale.size() != step.logit_rows.size()) {
    fail("begin_step: {} leading scales for {} logit rows", step.leading_scale.size(), step.logit_rows.size());
  }
  if (step.sequence_groups == 0 || step.sequences.size() % step.sequence_groups != 0) {
    fail("begin_step: {} sequence slices do not make {} equal groups", step.sequences.size(), step.sequence_groups);
  }
  if (step.block_size < 0) fail("begin_step: block size {}", step.block_size);
}

}  // namespace lumen::backend::common
