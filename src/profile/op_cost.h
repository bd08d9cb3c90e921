#pragma once
// What one backend op must move and compute, from its operands alone: the numbers a roofline
// puts next to the op's measured time. Bytes are the compulsory traffic (each operand read once,
// each result written once): a kernel that re-reads a weight tile from memory moves more, which
// is what a low achieved bandwidth then shows. FLOPs count a multiply-add as two and, for the
// element-wise ops, each arithmetic operation of the formula once (an exp as one).
#include <cstdint>
#include <span>

#include "backend/backend.h"

namespace lumen::profile {

struct OpCost {
  double bytes = 0;
  double flops = 0;
  // Whether the FLOPs run on int8 dot products (a quantized weight times activations quantized
  // to 8 bits, as the CPU matmuls do) rather than f32: which compute ceiling bounds the op.
  bool int8 = false;
  // The part of `bytes` that is a sequence's context rather than weights or activations: the
  // keys and values attention reads, a recurrent state read and written back. A bandwidth bound
  // that counts weights only leaves it out; the profile reports the bound both ways.
  double context_bytes = 0;

  OpCost& operator+=(const OpCost& other) {
    bytes += other.bytes;
    flops += other.flops;
    int8 = int8 || other.int8;
    context_bytes += other.context_bytes;
    return *this;
  }
};

// Bytes of a tensor view's rows as stored (a quantized weight's blocks, an f32 activation).
double view_bytes(const backend::TensorView& t);

// y = W x: the weight, x and y once each; 2 * in * out * n FLOPs.
OpCost matmul_cost(const backend::TensorView& w, const backend::TensorView& x, const backend::TensorView& y);
// Several weights over one x (read once).
OpCost matmul_same_input_cost(const backend::TensorView& x, std::span<const backend::Backend::MatmulOutput> outputs);
// Both products of a gated MLP's first half and the activation between them.
OpCost matmul_glu_cost(const backend::TensorView& gate_w, const backend::TensorView& up_w, const backend::TensorView& x,
                       backend::Backend::Glu glu, const backend::TensorView& gate);
OpCost moe_ffn_cost(const backend::TensorView& x, std::span<const backend::Backend::ExpertWork> experts,
                    const backend::TensorView& out);
// moe_ffn_routed: the routing is not on the host, so each of the min(n x k, n_experts) experts
// a call can choose counts as read once (a decode step's k distinct experts).
OpCost moe_ffn_routed_cost(const backend::TensorView& x, const backend::TensorView& experts,
                           const backend::RoutedExperts& m, const backend::TensorView& out);
OpCost get_rows_cost(const backend::TensorView& table, int64_t n_ids, const backend::TensorView& out);
OpCost rms_norm_cost(const backend::TensorView& x, const backend::TensorView& weight);
// `operands` f32 tensors of x's size read, one written, `flops_per_element` each.
OpCost elementwise_cost(const backend::TensorView& x, int operands_read, double flops_per_element);
OpCost glu_cost(const backend::TensorView& gate, backend::Backend::Glu glu);
OpCost rotate_heads_cost(const backend::TensorView& x, int64_t head_dim);
OpCost rope_cost(const backend::TensorView& x, const backend::RopeConfig& config);
OpCost store_kv_cost(const backend::TensorView& k, const backend::TensorView& v, const backend::KvLayer& cache);
// Each sequence's visible keys and values read once (its queries share them), q read and out
// written; QK^T and PV for every query head and visible position.
OpCost attention_cost(const backend::TensorView& q, const backend::KvLayer& cache,
                      std::span<const backend::SequenceSlice> seqs, const backend::AttentionConfig& config);
// Mamba 2's convolution: x, the taps and the bias read, out written, and each sequence's window
// of earlier inputs read and written back (its context bytes); the taps' multiply-adds, the
// bias and SiLU per output.
OpCost ssm_conv_cost(const backend::TensorView& x, const backend::TensorView& weight,
                     std::span<const backend::SsmSequence> seqs);
// Mamba 2's scan: x, dt, B, C and the per-head parameters read, y written, and each sequence's
// state read once and written once (its context bytes: the traffic a decode step cannot avoid
// while the state stays f32 and outgrows the caches).
OpCost ssm_scan_cost(const backend::TensorView& x, const backend::TensorView& dt, const backend::TensorView& b,
                     const backend::TensorView& c, std::span<const backend::SsmSequence> seqs);
// RWKV 7's state update: each sequence with rows has its state (head_size^2 floats per head)
// read and written once per call however many tokens (its context bytes, as Mamba 2's scan
// state), and per token six rows of heads x head_size values read and out written. Per token
// and head, 9 head_size^2 FLOPs: the sum against a (2 per value), the update (three products
// and two additions) and the sum against r (2 per value).
OpCost rwkv_wkv7_cost(const backend::Wkv7Rows& rows, int64_t head_size, std::span<const backend::Wkv7Sequence> seqs);

}  // namespace lumen::profile
