#pragma once
// The CPU implementation of the Backend interface: host memory, weights used in place (the
// mmap is the weight buffer), and the kernels of this directory spread over one persistent
// thread pool. After the first step at a given batch shape, a forward pass allocates nothing.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backend/backend.h"
#include "backend/common/composed_moe_ffn.h"
#include "backend/common/routed_expert_work.h"
#include "backend/common/composed_shift_keys.h"
#include "backend/common/host_op_clock.h"
#include "backend/cpu/attention.h"
#include "backend/cpu/matmul.h"
#include "backend/cpu/matmul_packed.h"
#include "backend/cpu/moe_ffn.h"
#include "backend/cpu/pack_budget.h"
#include "backend/cpu/packed_arena.h"
#include "backend/cpu/rope_table.h"
#include "util/thread_pool.h"

namespace lumen::backend {

class CpuBackend final : public Backend {
 public:
  // `threads` workers in total, the calling thread included (0: one per hardware thread).
  explicit CpuBackend(unsigned threads);

  std::string_view name() const override { return "cpu"; }
  ThreadPool& pool() { return pool_; }
  // The packed matrices' bytes, and the bytes of the packed copies the memory budget refused
  // (pack_budget.h: those matrices run on the file's layout).
  size_t packed_bytes() const { return packed_arena_.used_bytes(); }
  uint64_t unpacked_bytes() const { return unpacked_bytes_; }
  // Tests: what the packing budget reads instead of /proc/meminfo (MemAvailable, MemTotal).
  struct MemoryReport {
    uint64_t available = 0, total = 0;
  };
  void set_memory_probe(std::function<MemoryReport()> probe);
  // Tests: moe_ffn and shift_keys composed from this backend's own ops, as the CUDA backend
  // runs them (common/composed_moe_ffn.h, common/composed_shift_keys.h), instead of the CPU's
  // kernels, and no declared op (has_op false, so callers run the ops they fuse), so that a
  // whole model on the CPU checks the compositions against the native ops.
  void set_composed_ops(bool on);

 protected:
  // Every optional feature, every weight type the file format's reference kernels read, every
  // KV cache type.
  bool do_supports(BackendFeature) const override { return true; }
  bool do_supports_weight_type(tensor::DType type) const override;
  bool do_supports_kv_type(tensor::DType type) const override { return is_kv_cache_type(type); }
  // Every declared op, unless set_composed_ops asked for what a backend without them runs (the
  // callers' plain path: a whole model then checks it against the fused kernels).
  bool do_has_op(OpKind) const override { return composed_moe_ == nullptr; }

  // 64-byte aligned host memory, zero-filled.
  std::unique_ptr<Buffer> do_allocate(size_t bytes) override;
  TensorView do_upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) override;
  void do_copy_to_host(const TensorView& src, float* dst) override;
  void do_copy_from_host(const float* src, TensorView& dst) override;

  void do_matmul(const TensorView& w, const TensorView& x, TensorView& y) override;
  void do_matmul_same_input(const TensorView& x, std::span<const MatmulOutput> outputs) override;
  void do_matmul_glu(const TensorView& gate_w, const TensorView& up_w, const TensorView& x, Glu glu, TensorView& gate,
                     TensorView& up) override;
  void do_moe_ffn(const TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
                  TensorView& out) override;
  // cpu_routed_moe.cc: common::route_token row by row, and the routing grouped by expert into
  // moe_ffn (so both give what the model's host path gave before them, bit for bit).
  void do_route_experts(const TensorView& logits, const TensorView* selection_bias, const RouterConfig& config,
                        TensorView& experts, TensorView& weights, TensorView* counts) override;
  void do_moe_ffn_routed(const TensorView& x, const TensorView& experts, const TensorView& weights,
                         const RoutedExperts& matrices, Glu glu, TensorView& out) override;
  void do_get_rows(const TensorView& table, std::span<const int32_t> ids, TensorView& out) override;
  void do_rms_norm(const TensorView& x, const TensorView& weight, float eps, TensorView& out) override;
  void do_add(const TensorView& a, const TensorView& b, TensorView& out) override;
  void do_add_rms_norm(const TensorView& a, const TensorView& b, const TensorView& weight, float eps, TensorView& sum,
                       TensorView& out) override;
  void do_add_row(TensorView& x, const TensorView& row) override;
  void do_scale(TensorView& x, float factor) override;
  void do_swiglu(const TensorView& gate, const TensorView& up, TensorView& out) override;
  void do_geglu(const TensorView& gate, const TensorView& up, TensorView& out) override;
  void do_rotate_heads(TensorView& x, int64_t head_dim) override;
  void do_rope(TensorView& x, std::span<const int32_t> positions, const RopeConfig& config) override;
  void do_store_kv(const TensorView& k, const TensorView& v, std::span<const SequenceSlice> seqs,
                   KvLayer& cache) override;
  void do_rope_store_kv(TensorView& q, TensorView& k, const TensorView& v, std::span<const int32_t> positions,
                        const RopeConfig& config, std::span<const SequenceSlice> seqs, KvLayer& cache) override;
  void do_attention(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                    const AttentionConfig& config, TensorView& out) override;
  void do_attention_scored(const TensorView& q, const KvLayer& cache, std::span<const SequenceSlice> seqs,
                           const AttentionConfig& config, std::span<const AttentionScoreTarget> targets,
                           TensorView& out) override;
  void do_copy_kv_block(KvLayer& cache, int64_t src, int64_t dst) override;
  void do_copy_kv_row(KvLayer& cache, int64_t src, int64_t dst) override;
  void do_read_kv_block(const KvLayer& cache, int64_t block, void* host_k, void* host_v) override;
  void do_shift_keys(KvLayer& cache, std::span<const int32_t> blocks, int32_t delta, const RopeConfig& config,
                     int64_t head_dim) override;
  void do_write_kv_block(KvLayer& cache, int64_t block, const void* host_k, const void* host_v) override;
  // cpu_backend_encoder.cc
  void do_layer_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, float eps,
                     TensorView& out) override;
  void do_gelu_erf(TensorView& x) override;
  void do_gelu_tanh(TensorView& x) override;
  void do_activation(TensorView& x, Activation kind) override;
  void do_bidirectional_attention(const TensorView& q, const TensorView& k, const TensorView& v,
                                  std::span<const SequenceSlice> seqs, const AttentionConfig& config,
                                  TensorView& out) override;
  // cpu_backend_ssm.cc
  void do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                   std::span<const SsmSequence> seqs, TensorView& out) override;
  void do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                   const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) override;
  // cpu_backend_rwkv.cc
  void do_rwkv_wkv7(const Wkv7Rows& rows, int64_t head_size, std::span<const Wkv7Sequence> seqs,
                    TensorView& out) override;
  void do_rwkv7_norm(const TensorView& x, const TensorView& weight, const TensorView& bias, double eps, int64_t group,
                     TensorView& out) override;
  void do_rwkv7_token_shift(const TensorView& x, std::span<const TokenShiftSequence> seqs, const TensorView& mixes,
                            TensorView& out) override;
  void do_rwkv7_activation(TensorView& x, Rwkv7Activation f) override;
  void do_rwkv7_value_residual(TensorView& v, const TensorView& first, const TensorView& mix,
                               const TensorView& v0) override;
  void do_rwkv7_keys(Rwkv7KeyRows& rows, const Rwkv7KeyWeights& weights, int64_t head_size) override;
  void do_rwkv7_bonus_gate(TensorView& out, const TensorView& r, const TensorView& k, const TensorView& v,
                           const TensorView& g, const TensorView& r_k, int64_t head_size) override;
  void do_attention_scores(const TensorView& q, const KvLayer& cache, const SequenceSlice& seq, int64_t first_row,
                           const AttentionConfig& config, float* scores, int64_t slot_stride) override;
  void do_gather_kv_rows(KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                         std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim) override;
  // Every op is done when it returns: the host's clock times it.
  bool do_time_ops(bool on) override {
    op_clock_.enable(on);
    return true;
  }
  void do_mark_op_time() override { op_clock_.mark(); }
  std::vector<double> do_take_op_times() override { return op_clock_.take(); }

 private:
  // A weight matrix of a type with packed kernels (matmul_packed.h), registered by
  // upload_weights (each expert's matrix of a 3-D expert tensor on its own) and packed by the
  // first matmul that uses it: only matrices that are really multiplied get packed (a MoE
  // expert no token was routed to stays unpacked) (an untied token embedding is only ever read by get_rows, which, like
  // every other op, keeps reading the file's layout).
  struct PackedSlot {
    tensor::DType type;
    int64_t rows, cols;
    std::unique_ptr<cpu::PackedWeights> packed;  // null until the first matmul
    bool left_unpacked = false;                  // the budget refused it: the file's layout for good
  };
  const cpu::PackedWeights* packed_weights(const cpu::WeightMatrix& w);
  cpu::PackBudget pack_budget() const;
  // Notes a matrix the budget left unpacked, and says so on stderr the first time.
  void leave_unpacked(size_t bytes, const cpu::PackBudget& budget);
  // Describes one matmul's (checked) operands for the cpu:: kernels (weights is filled).
  cpu::MatmulTarget matmul_target(const TensorView& w, TensorView& y, cpu::WeightMatrix& weights);
  // A (checked) 2-D weight view described for the cpu:: kernels, with its packed form when it has one.
  cpu::WeightMatrix weight_matrix(const TensorView& w);

  ThreadPool pool_;
  common::HostOpClock op_clock_;
  cpu::PackedArena packed_arena_;  // the packed matrices' memory: outlives packed_weights_
  std::unordered_map<const void*, PackedSlot> packed_weights_;  // by host address
  // The bytes of this backend's live buffers that the kernel backs only as they are touched (the
  // KV pool): shared with them, since a buffer may outlive the backend.
  std::shared_ptr<std::atomic<uint64_t>> lazy_buffer_bytes_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::function<MemoryReport()> memory_probe_;  // empty: /proc/meminfo
  uint64_t unpacked_bytes_ = 0;
  cpu::MatmulScratch matmul_scratch_;
  cpu::MoeScratch moe_scratch_;
  std::vector<cpu::ExpertMatrices> experts_;  // moe_ffn's per-call descriptions, reused
  std::vector<float> router_probs_;           // route_experts' per-token scratch
  common::RoutedExpertWork routed_work_;      // moe_ffn_routed's ExpertWork list, reused
  // set_composed_ops(true): not null.
  std::unique_ptr<common::ComposedMoeFfn> composed_moe_;
  std::unique_ptr<common::ComposedShiftKeys> composed_shift_;
  cpu::AttentionScratch attention_scratch_;
  cpu::RopeTable rope_table_;  // cos/sin rows of the current batch's positions
  std::vector<float> ssm_scratch_;  // the chunked scan's scores and per-worker scratch, reused
  // The scan's per-call bookkeeping (each sequence's scores offset, the score tasks), kept so a
  // decode step allocates nothing.
  std::vector<int64_t> ssm_scores_at_;
  std::vector<std::pair<int64_t, int64_t>> ssm_score_tasks_;
};

}  // namespace lumen::backend
