#include "profile/op_cost.h"

#include <algorithm>
#include <bit>

namespace lumen::profile {

namespace {

using backend::TensorView;

constexpr double kF32 = 4.0;

bool is_plain_float(tensor::DType type) {
  return type == tensor::DType::F32 || type == tensor::DType::F16 || type == tensor::DType::BF16;
}

// Per element of the gate: silu(g) * u is a negation, an exp, an add, a division and a
// multiplication; gelu_tanh(g) * u about twice that (a cube, a tanh and the scalings).
double glu_flops_per_element(backend::Backend::Glu glu) { return glu == backend::Backend::Glu::Swiglu ? 5.0 : 10.0; }

}  // namespace

double view_bytes(const TensorView& t) { return static_cast<double>(t.rows()) * static_cast<double>(t.row_bytes); }

OpCost matmul_cost(const TensorView& w, const TensorView& x, const TensorView& y) {
  const double in = static_cast<double>(w.dims[0]), out = static_cast<double>(w.dims[1]);
  const double n = static_cast<double>(x.rows());
  return {view_bytes(w) + in * n * kF32 + static_cast<double>(y.elements()) * kF32, 2.0 * in * out * n,
          !is_plain_float(w.type)};
}

OpCost matmul_same_input_cost(const TensorView& x, std::span<const backend::Backend::MatmulOutput> outputs) {
  OpCost total;
  for (const auto& o : outputs) total += matmul_cost(*o.w, x, *o.y);
  // x is read once for all of them.
  total.bytes -= static_cast<double>(outputs.size() > 0 ? outputs.size() - 1 : 0) * static_cast<double>(x.elements()) * kF32;
  return total;
}

OpCost matmul_glu_cost(const TensorView& gate_w, const TensorView& up_w, const TensorView& x,
                       backend::Backend::Glu glu, const TensorView& gate) {
  OpCost total = matmul_cost(gate_w, x, gate);
  total += matmul_cost(up_w, x, gate);
  total.bytes -= static_cast<double>(x.elements()) * kF32;
  total.flops += glu_flops_per_element(glu) * static_cast<double>(gate.elements());
  return total;
}

OpCost moe_ffn_cost(const TensorView& x, std::span<const backend::Backend::ExpertWork> experts, const TensorView& out) {
  OpCost total{static_cast<double>(x.elements()) * kF32 + static_cast<double>(out.elements()) * kF32, 0, false};
  for (const auto& e : experts) {
    const double rows = static_cast<double>(e.rows.size());
    const double in = static_cast<double>(e.gate->dims[0]), ff = static_cast<double>(e.gate->dims[1]);
    total.bytes += view_bytes(*e.gate) + view_bytes(*e.up) + view_bytes(*e.down);
    total.flops += rows * (3.0 * 2.0 * in * ff + 5.0 * ff + 2.0 * in);
    total.int8 = total.int8 || !is_plain_float(e.gate->type);
  }
  return total;
}

OpCost moe_ffn_routed_cost(const TensorView& x, const TensorView& experts, const backend::RoutedExperts& m,
                           const TensorView& out) {
  // The routing stays on the backend: k experts a row, each chosen one's matrices read once,
  // at most every expert's.
  const double n = static_cast<double>(x.rows()), k = static_cast<double>(experts.dims[0]);
  const double n_experts = static_cast<double>(m.gate->dims[2]);
  const double chosen = std::min(n * k, n_experts);
  const double in = static_cast<double>(m.gate->dims[0]), ff = static_cast<double>(m.gate->dims[1]);
  OpCost total{static_cast<double>(x.elements()) * kF32 + static_cast<double>(out.elements()) * kF32 +
                   chosen / n_experts * (view_bytes(*m.gate) + view_bytes(*m.up) + view_bytes(*m.down)),
               n * k * (3.0 * 2.0 * in * ff + 5.0 * ff + 2.0 * in), !is_plain_float(m.gate->type)};
  if (m.shared_gate != nullptr) {
    const double ffs = static_cast<double>(m.shared_gate->dims[1]);
    total.bytes += view_bytes(*m.shared_gate) + view_bytes(*m.shared_up) + view_bytes(*m.shared_down);
    total.flops += n * (3.0 * 2.0 * in * ffs + 5.0 * ffs + 2.0 * in);
  }
  return total;
}

OpCost get_rows_cost(const TensorView& table, int64_t n_ids, const TensorView& out) {
  return {static_cast<double>(n_ids) * static_cast<double>(table.row_bytes) + static_cast<double>(out.elements()) * kF32, 0,
          false};
}

OpCost rms_norm_cost(const TensorView& x, const TensorView& weight) {
  // Square and sum, then times 1/rms and times the weight: four per element.
  const double e = static_cast<double>(x.elements());
  return {2.0 * e * kF32 + static_cast<double>(weight.elements()) * kF32, 4.0 * e, false};
}

OpCost elementwise_cost(const TensorView& x, int operands_read, double flops_per_element) {
  const double e = static_cast<double>(x.elements());
  return {(operands_read + 1) * e * kF32, flops_per_element * e, false};
}

OpCost glu_cost(const TensorView& gate, backend::Backend::Glu glu) {
  return elementwise_cost(gate, 2, glu_flops_per_element(glu));
}

OpCost rotate_heads_cost(const TensorView& x, int64_t head_dim) {
  // log2(head_dim) butterfly stages of one add or subtract per element, then the scaling.
  const double stages = static_cast<double>(std::bit_width(static_cast<uint64_t>(std::max<int64_t>(head_dim, 1))) - 1);
  return elementwise_cost(x, 1, stages + 1.0);
}

OpCost rope_cost(const TensorView& x, const backend::RopeConfig& config) {
  // Each rotated pair: four multiplications and two additions, three per rotated element.
  const double heads = static_cast<double>(x.dims[1] * x.dims[2] * x.dims[3]);
  const double rotated = heads * static_cast<double>(std::min(config.rope_dims, x.dims[0]));
  return {2.0 * static_cast<double>(x.elements()) * kF32, 3.0 * rotated, false};
}

OpCost store_kv_cost(const TensorView& k, const TensorView& v, const backend::KvLayer& cache) {
  const double tokens = static_cast<double>(k.rows());
  OpCost cost{static_cast<double>(k.elements()) * kF32 + tokens * static_cast<double>(backend::kv_slice_bytes(cache.k.type, k.dims[0])), 0,
              false};
  if (!backend::values_in_keys(cache)) {
    cost.bytes += static_cast<double>(v.elements()) * kF32 +
                  tokens * static_cast<double>(backend::kv_slice_bytes(cache.v.type, v.dims[0]));
  }
  return cost;
}

OpCost attention_cost(const TensorView& q, const backend::KvLayer& cache, std::span<const backend::SequenceSlice> seqs,
                      const backend::AttentionConfig& config) {
  const int64_t value_dim = backend::attention_value_dim(config);
  const double key_row = static_cast<double>(backend::kv_slice_bytes(cache.k.type, config.head_dim * config.n_kv_heads));
  const double value_row = backend::values_in_keys(cache)
                               ? 0.0
                               : static_cast<double>(backend::kv_slice_bytes(cache.v.type, value_dim * config.n_kv_heads));
  const double per_position_flops = 2.0 * static_cast<double>(config.head_dim + value_dim) * static_cast<double>(config.n_heads);
  OpCost cost{static_cast<double>(q.elements()) * kF32, 0, false};
  for (const backend::SequenceSlice& s : seqs) {
    const int64_t first = s.start_pos, last = s.start_pos + s.n_tokens - 1;
    auto lowest_visible = [&](int64_t pos) {
      return config.sliding_window > 0 ? std::max<int64_t>(0, pos - config.sliding_window + 1) : 0;
    };
    // The positions any of the slice's queries sees: read once for all of them.
    const double read = static_cast<double>(last - lowest_visible(first) + 1);
    cost.bytes += read * (key_row + value_row);
    cost.context_bytes += read * (key_row + value_row);
    cost.bytes += static_cast<double>(s.n_tokens * value_dim * config.n_heads) * kF32;  // out
    for (int64_t pos = first; pos <= last; ++pos) {
      cost.flops += per_position_flops * static_cast<double>(pos - lowest_visible(pos) + 1);
    }
  }
  return cost;
}

OpCost ssm_conv_cost(const TensorView& x, const TensorView& weight, std::span<const backend::SsmSequence> seqs) {
  const double n = static_cast<double>(x.rows()), channels = static_cast<double>(x.dims[0]);
  const double taps = static_cast<double>(weight.dims[0]);
  OpCost cost{(2.0 * n * channels + channels) * kF32 + view_bytes(weight), 0, false};
  for (const backend::SsmSequence& s : seqs) cost.context_bytes += 2.0 * view_bytes(s.conv_window);
  cost.bytes += cost.context_bytes;
  // Per output: the taps' multiply-adds, the bias, then SiLU (a negation, an exp, an add, a
  // division and a multiplication).
  cost.flops = n * channels * (2.0 * taps + 1.0 + 5.0);
  return cost;
}

OpCost ssm_scan_cost(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                     std::span<const backend::SsmSequence> seqs) {
  const double n = static_cast<double>(x.rows()), inner = static_cast<double>(x.dims[0]);
  const double heads = static_cast<double>(dt.dims[0]);
  // x and y, dt, B and C per row; A, D and dt's bias once.
  OpCost cost{(2.0 * inner + heads + static_cast<double>(b.dims[0] + c.dims[0])) * n * kF32 + 3.0 * heads * kF32, 0,
              false};
  for (const backend::SsmSequence& s : seqs) cost.context_bytes += 2.0 * view_bytes(s.state);
  cost.bytes += cost.context_bytes;
  // Per state element and row: decay times state plus B times x dt (a multiply and a
  // multiply-add), then its product with C summed (a multiply-add); per channel x dt and the D
  // skip; per head the softplus and the exp of dt A.
  double state_elements = 0;
  for (const backend::SsmSequence& s : seqs) {
    state_elements += static_cast<double>(s.state.elements()) * static_cast<double>(s.n_tokens);
  }
  cost.flops = 6.0 * state_elements + 3.0 * inner * n + 5.0 * heads * n;
  return cost;
}

OpCost rwkv_wkv7_cost(const backend::Wkv7Rows& rows, int64_t head_size, std::span<const backend::Wkv7Sequence> seqs) {
  const auto width = static_cast<double>(rows.r.dims[0]);
  double tokens = 0;
  OpCost cost;
  for (const backend::Wkv7Sequence& s : seqs) {
    if (s.n_tokens == 0) continue;  // its state is not touched
    tokens += static_cast<double>(s.n_tokens);
    cost.context_bytes += 2.0 * view_bytes(s.state);
  }
  cost.bytes = cost.context_bytes + 7.0 * tokens * width * kF32;
  cost.flops = 9.0 * tokens * width * static_cast<double>(head_size);
  return cost;
}

}  // namespace lumen::profile
