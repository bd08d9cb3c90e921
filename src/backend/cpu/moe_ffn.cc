// The CPU's mixture-of-experts FFN. Each expert runs once over all of its rows: the rows are
// gathered (a copy of a few KB per row), then the gate and up products with the GLU of every
// expert form one parallel job and the down products another (matmul_grouped), with exactly
// the kernels a dense FFN uses. A row's result therefore does not depend on which other rows share its
// experts (the matmul kernels compute every (row, token) product the same way in any tile), so
// the engine's batch invariance holds for MoE models too.
#include "backend/cpu/moe_ffn.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace lumen::backend::cpu {

namespace {

constexpr int64_t kCombineTaskRows = 16;

void check_expert(const ExpertMatrices& e, int64_t cols, int64_t n_tokens, int64_t n_slots, size_t index) {
  if (e.gate.cols != cols || e.up.cols != cols || e.gate.rows != e.up.rows || e.down.cols != e.gate.rows ||
      e.down.rows != cols) {
    fail("moe_ffn: expert {} has gate {} x {}, up {} x {}, down {} x {} for rows of {} values", index, e.gate.rows,
         e.gate.cols, e.up.rows, e.up.cols, e.down.rows, e.down.cols, cols);
  }
  const int biases = (e.gate_bias != nullptr) + (e.up_bias != nullptr) + (e.down_bias != nullptr);
  if (biases != 0 && biases != 3) fail("moe_ffn: expert {} has some of its biases only", index);
  if (e.slots.size() != e.rows.size() || e.weights.size() != e.rows.size()) {
    fail("moe_ffn: expert {} has {} rows, {} slots and {} weights", index, e.rows.size(), e.slots.size(),
         e.weights.size());
  }
  for (size_t i = 0; i < e.rows.size(); ++i) {
    if (e.rows[i] < 0 || e.rows[i] >= n_tokens)
      fail("moe_ffn: expert {} row {} is not in [0, {})", index, e.rows[i], n_tokens);
    if (e.slots[i] < 0 || e.slots[i] >= n_slots)
      fail("moe_ffn: expert {} slot {} is not in [0, {})", index, e.slots[i], n_slots);
  }
}

// Each expert's gate and up products (apart, in s.gate and s.up) with its biases added, then
// the GLU into s.gate: one task per expert.
void add_biases_and_glu(std::span<const ExpertMatrices> experts, GluRowFn glu, ThreadPool& pool, MoeScratch& s) {
  pool.parallel_for(static_cast<int64_t>(experts.size()), [&](int64_t i, unsigned) {
    const ExpertMatrices& e = experts[static_cast<size_t>(i)];
    const int64_t ff = e.gate.rows;
    for (size_t r = 0; r < e.rows.size(); ++r) {
      float* gate = s.gate.data() + s.ff_offset[static_cast<size_t>(i)] + static_cast<int64_t>(r) * ff;
      float* up = s.up.data() + s.ff_offset[static_cast<size_t>(i)] + static_cast<int64_t>(r) * ff;
      if (e.gate_bias != nullptr) {
        for (int64_t c = 0; c < ff; ++c) {
          gate[c] += e.gate_bias[c];
          up[c] += e.up_bias[c];
        }
      }
      glu(gate, up, ff, gate);
    }
  });
}

}  // namespace

void moe_ffn(const float* x, int64_t x_stride, int64_t n_tokens, int64_t cols, std::span<const ExpertMatrices> experts,
             int64_t n_slots, GluRowFn glu, float* out, int64_t out_stride, ThreadPool& pool, MoeScratch& s) {
  if (n_tokens < 0 || cols <= 0 || n_slots <= 0 || x_stride < cols || out_stride < cols || glu == nullptr ||
      (n_tokens > 0 && (x == nullptr || out == nullptr))) {
    fail("moe_ffn: bad arguments ({} rows of {} values, {} slots)", n_tokens, cols, n_slots);
  }
  const size_t n_experts = experts.size();
  s.row_offset.assign(n_experts + 1, 0);
  s.ff_offset.assign(n_experts + 1, 0);
  for (size_t i = 0; i < n_experts; ++i) {
    check_expert(experts[i], cols, n_tokens, n_slots, i);
    const auto m = static_cast<int64_t>(experts[i].rows.size());
    s.row_offset[i + 1] = s.row_offset[i] + m;
    s.ff_offset[i + 1] = s.ff_offset[i] + m * experts[i].gate.rows;
  }
  if (n_tokens == 0) return;
  const auto places = static_cast<size_t>(n_tokens * n_slots);
  s.filled.assign(places, 0);
  const auto need = [](std::vector<float>& v, int64_t n) {
    if (v.size() < static_cast<size_t>(n)) v.resize(static_cast<size_t>(n));
  };
  need(s.slot_out, static_cast<int64_t>(places) * cols);
  need(s.x, s.row_offset[n_experts] * cols);
  need(s.gate, s.ff_offset[n_experts]);
  need(s.up, s.ff_offset[n_experts]);
  need(s.y, s.row_offset[n_experts] * cols);

  // Every expert's rows, gathered expert after expert.
  for (size_t i = 0; i < n_experts; ++i) {
    const ExpertMatrices& e = experts[i];
    for (size_t r = 0; r < e.rows.size(); ++r) {
      const size_t place = static_cast<size_t>(e.rows[r] * n_slots + e.slots[r]);
      if (s.filled[place] != 0) fail("moe_ffn: row {} slot {} is filled twice", e.rows[r], e.slots[r]);
      s.filled[place] = 1;
      std::memcpy(s.x.data() + (s.row_offset[i] + static_cast<int64_t>(r)) * cols, x + e.rows[r] * x_stride,
                  static_cast<size_t>(cols) * sizeof(float));
    }
  }
  // Gate and up (with the GLU) of every expert in one job, then every down in another.
  const bool biased = std::any_of(experts.begin(), experts.end(), [](const ExpertMatrices& e) { return e.gate_bias; });
  s.targets.resize(2 * n_experts);
  s.groups.resize(biased ? 2 * n_experts : n_experts);
  for (size_t i = 0; i < n_experts; ++i) {
    const ExpertMatrices& e = experts[i];
    const int64_t ff = e.gate.rows, rows = static_cast<int64_t>(e.rows.size());
    const float* xi = s.x.data() + s.row_offset[i] * cols;
    s.targets[2 * i] = {&e.gate, s.gate.data() + s.ff_offset[i], ff};
    s.targets[2 * i + 1] = {&e.up, s.up.data() + s.ff_offset[i], ff};
    if (biased) {  // gate and up apart: the biases go in before the GLU
      s.groups[2 * i] = {&s.targets[2 * i], xi, cols, rows};
      s.groups[2 * i + 1] = {&s.targets[2 * i + 1], xi, cols, rows};
    } else {
      s.groups[i] = {&s.targets[2 * i], xi, cols, rows};
    }
  }
  if (biased) {
    matmul_grouped(s.groups, nullptr, pool, s.quantized);
    add_biases_and_glu(experts, glu, pool, s);
    s.groups.resize(n_experts);
  } else {
    matmul_grouped(s.groups, glu, pool, s.quantized);
  }
  for (size_t i = 0; i < n_experts; ++i) {
    const ExpertMatrices& e = experts[i];
    s.targets[i] = {&e.down, s.y.data() + s.row_offset[i] * cols, cols};
    s.groups[i] = {&s.targets[i], s.gate.data() + s.ff_offset[i], e.gate.rows, static_cast<int64_t>(e.rows.size())};
  }
  matmul_grouped(s.groups, nullptr, pool, s.quantized);
  for (size_t i = 0; i < n_experts; ++i) {
    const ExpertMatrices& e = experts[i];
    for (size_t r = 0; r < e.rows.size(); ++r) {
      const size_t place = static_cast<size_t>(e.rows[r] * n_slots + e.slots[r]);
      const float w = e.weights[r];
      const float* y = s.y.data() + (s.row_offset[i] + static_cast<int64_t>(r)) * cols;
      float* dst = s.slot_out.data() + place * static_cast<size_t>(cols);
      if (e.down_bias != nullptr) {
        for (int64_t c = 0; c < cols; ++c) dst[c] = (y[c] + e.down_bias[c]) * w;
      } else {
        for (int64_t c = 0; c < cols; ++c) dst[c] = y[c] * w;
      }
    }
  }
  // Each row's weighted results summed in slot order (a row's first filled slot is copied, so
  // the sums round exactly as llama.cpp's chain of adds).
  struct Combine {
    const MoeScratch* s;
    float* out;
    int64_t out_stride, cols, n_slots, n_tokens;
  } job{&s, out, out_stride, cols, n_slots, n_tokens};
  const Combine* j = &job;
  const auto combine_rows = [j](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      float* o = j->out + t * j->out_stride;
      bool first = true;
      for (int64_t slot = 0; slot < j->n_slots; ++slot) {
        const size_t place = static_cast<size_t>(t * j->n_slots + slot);
        if (j->s->filled[place] == 0) continue;
        const float* p = j->s->slot_out.data() + place * static_cast<size_t>(j->cols);
        if (first) {
          std::memcpy(o, p, static_cast<size_t>(j->cols) * sizeof(float));
          first = false;
        } else {
          for (int64_t c = 0; c < j->cols; ++c) o[c] += p[c];
        }
      }
      if (first) std::fill(o, o + j->cols, 0.0f);
    }
  };
  if (pool.size() == 1 || n_tokens < 2 * kCombineTaskRows) {
    combine_rows(0, n_tokens);
  } else {
    const auto* cr = &combine_rows;
    pool.parallel_for((n_tokens + kCombineTaskRows - 1) / kCombineTaskRows, [cr, n_tokens](int64_t task, unsigned) {
      const int64_t begin = task * kCombineTaskRows;
      (*cr)(begin, std::min(n_tokens, begin + kCombineTaskRows));
    });
  }
}

}  // namespace lumen::backend::cpu
