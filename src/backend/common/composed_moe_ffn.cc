#include "backend/common/composed_moe_ffn.h"

#include <algorithm>

#include "util/error.h"

namespace lumen::backend::common {

namespace {

// Rows first..first+n of an f32 matrix of `cols` values a row.
TensorView rows_of(const std::unique_ptr<Buffer>& buffer, int64_t cols, int64_t first, int64_t n) {
  return f32_matrix(static_cast<float*>(buffer->data()) + first * cols, cols, n);
}

void check_expert(const ExpertWork& e, int64_t cols, int64_t n, int64_t n_slots, size_t index) {
  const int64_t ff = e.gate->dims[1];
  if (e.gate->dims[0] != cols || e.up->dims[0] != cols || e.up->dims[1] != ff || e.down->dims[0] != ff ||
      e.down->dims[1] != cols) {
    fail("moe_ffn: expert {} has gate {} x {}, up {} x {}, down {} x {} for rows of {} values", index, e.gate->dims[1],
         e.gate->dims[0], e.up->dims[1], e.up->dims[0], e.down->dims[1], e.down->dims[0], cols);
  }
  if (e.slots.size() != e.rows.size() || e.weights.size() != e.rows.size()) {
    fail("moe_ffn: expert {} has {} rows, {} slots and {} weights", index, e.rows.size(), e.slots.size(),
         e.weights.size());
  }
  for (size_t i = 0; i < e.rows.size(); ++i) {
    if (e.rows[i] < 0 || e.rows[i] >= n) fail("moe_ffn: expert {} row {} is not in [0, {})", index, e.rows[i], n);
    if (e.slots[i] < 0 || e.slots[i] >= n_slots) {
      fail("moe_ffn: expert {} slot {} is not in [0, {})", index, e.slots[i], n_slots);
    }
  }
}

}  // namespace

void ComposedMoeFfn::ensure_capacity(Backend& backend, int64_t cols, int64_t pairs, int64_t ff_values,
                                     int64_t slot_rows) {
  const auto floats = [&](int64_t n) {
    return backend.allocate(static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(float));
  };
  if (cols != cols_) {  // another model's width: start over
    cols_ = cols;
    pairs_ = ff_values_ = slot_rows_ = -1;
  }
  if (pairs > pairs_) {
    pairs_ = pairs;
    gathered_ = floats(pairs * cols);
    // One row more than the pairs: the last stays zero (a new buffer is zero-filled, and no
    // pair index reaches it), the source of the places no expert fills.
    down_ = floats((pairs + 1) * cols);
  }
  if (ff_values > ff_values_) {
    ff_values_ = ff_values;
    gate_ = floats(ff_values);
    up_ = floats(ff_values);
  }
  if (slot_rows > slot_rows_) {
    slot_rows_ = slot_rows;
    slots_ = floats(slot_rows * cols);
  }
}

void ComposedMoeFfn::run(Backend& backend, const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots,
                         Glu glu, TensorView& out) {
  const int64_t n = x.rows(), cols = x.dims[0];
  if (n_slots <= 0) fail("moe_ffn: {} slots per row", n_slots);
  if (!biased_glu_) {
    if (glu == Glu::SwigluOai) fail("moe_ffn: the composed experts do not run gpt-oss's clamped SwiGLU");
    for (const ExpertWork& e : experts) {
      if (e.gate_bias != nullptr || e.up_bias != nullptr || e.down_bias != nullptr) {
        fail("moe_ffn: the composed experts do not add expert biases");
      }
    }
  }
  int64_t pairs = 0, ff_values = 0;
  for (size_t i = 0; i < experts.size(); ++i) {
    check_expert(experts[i], cols, n, n_slots, i);
    pairs += static_cast<int64_t>(experts[i].rows.size());
    ff_values += static_cast<int64_t>(experts[i].rows.size()) * experts[i].gate->dims[1];
  }
  if (n == 0) return;
  ensure_capacity(backend, cols, pairs, ff_values, n * (n_slots - 1));
  const auto zero_row = static_cast<int32_t>(pairs_);  // down_'s last row

  // Every place's pair (a place filled twice is refused before anything is written).
  pair_of_place_.assign(static_cast<size_t>(n * n_slots), zero_row);
  rows_.clear();
  for (const ExpertWork& e : experts) {
    for (size_t r = 0; r < e.rows.size(); ++r) {
      int32_t& place = pair_of_place_[static_cast<size_t>(e.slots[r] * n + e.rows[r])];
      if (place != zero_row) fail("moe_ffn: row {} slot {} is filled twice", e.rows[r], e.slots[r]);
      place = static_cast<int32_t>(rows_.size());
      rows_.push_back(e.rows[r]);
    }
  }

  // 1-3: gather, then each expert's FFN over its rows, then the router weights.
  if (pairs > 0) {
    TensorView gathered = rows_of(gathered_, cols, 0, pairs);
    backend.get_rows(x, rows_, gathered);
  }
  int64_t first = 0, ff_first = 0;
  for (const ExpertWork& e : experts) {
    const auto m = static_cast<int64_t>(e.rows.size());
    if (m == 0) continue;
    const int64_t ff = e.gate->dims[1];
    const TensorView xe = rows_of(gathered_, cols, first, m);
    TensorView gate = f32_matrix(static_cast<float*>(gate_->data()) + ff_first, ff, m);
    TensorView up = f32_matrix(static_cast<float*>(up_->data()) + ff_first, ff, m);
    TensorView ye = rows_of(down_, cols, first, m);
    const bool biased = e.gate_bias != nullptr || e.up_bias != nullptr || e.down_bias != nullptr;
    if (biased || glu == Glu::SwigluOai) {
      const Backend::MatmulOutput products[] = {{e.gate, &gate}, {e.up, &up}};
      backend.matmul_same_input(xe, products);
      biased_glu_(gate, up, e.gate_bias, e.up_bias, glu);
    } else {
      backend.matmul_glu(*e.gate, *e.up, xe, glu, gate, up);
    }
    backend.matmul(*e.down, gate, ye);
    if (e.down_bias != nullptr) backend.add_row(ye, *e.down_bias);
    for (int64_t r = 0; r < m; ++r) {
      const float w = e.weights[static_cast<size_t>(r)];
      if (w == 1.0f) continue;  // x * 1 is x: a shared expert's rows without a gate
      TensorView row = rows_of(down_, cols, first + r, 1);
      backend.scale(row, w);
    }
    first += m;
    ff_first += m * ff;
  }

  // 4-5: slot 0 of every row into out, the other slots beside it, then added in slot order.
  const TensorView down = rows_of(down_, cols, 0, pairs_ + 1);
  const auto places = std::span<const int32_t>(pair_of_place_);
  backend.get_rows(down, places.first(static_cast<size_t>(n)), out);
  if (n_slots == 1) return;
  TensorView later = rows_of(slots_, cols, 0, n * (n_slots - 1));
  backend.get_rows(down, places.subspan(static_cast<size_t>(n)), later);
  for (int64_t s = 1; s < n_slots; ++s) {
    const TensorView slot = rows_of(slots_, cols, (s - 1) * n, n);
    backend.add(out, slot, out);
  }
}

}  // namespace lumen::backend::common
