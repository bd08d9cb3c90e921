#pragma once
// A Backend that runs every op on another backend and records how long it took, what it moved
// and computed (op_cost.h), and which part of the model it belongs to. The model is loaded
// through it (LoadedModel::load(path, profiling_backend)), so the serving engine's path has no
// profiling code at all: profiling off costs nothing because it is a different object.
//
// Parts: each weight's data pointer is mapped to its GGUF tensor name (name_weights), and an op
// with a named weight sets the current part ("blk.7.attn_q.weight": layer 7); the ops between
// (rope, attention, the residual add) belong to the part of the last named weight before them,
// which is the order a transformer layer runs in.
//
// Times are host wall-clock around each call, so they are the op's time only on a backend that
// finishes its work before returning (the CPU); `lumen bench profile` refuses other devices.
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "gguf/file.h"
#include "profile/op_record.h"
#include "util/thread_pool.h"

namespace lumen::profile {

class ProfilingBackend final : public backend::Backend, private WorkerSpanObserver {
 public:
  // `pool`: the inner backend's worker threads, to record their task spans (null: none).
  ProfilingBackend(std::unique_ptr<backend::Backend> inner, ThreadPool* pool);
  ~ProfilingBackend() override;

  backend::Backend& inner() { return *inner_; }
  // Names every weight uploaded so far by the GGUF tensor its host data came from.
  void name_weights(const gguf::GgufFile& file);

  // Recording is off until begin_step; end_step returns what ran in between.
  void begin_step();
  StepRecording end_step();
  const std::string& op_name(uint32_t id) const { return op_names_[id]; }

  std::string_view name() const override { return inner_->name(); }
  std::optional<backend::DeviceMemory> device_memory() const override { return inner_->device_memory(); }
  bool supports_kv_type(tensor::DType type) const override { return inner_->supports_kv_type(type); }
  std::unique_ptr<backend::Buffer> allocate(size_t bytes) override { return inner_->allocate(bytes); }
  backend::TensorView upload_weights(tensor::DType type, std::array<int64_t, 4> dims, const void* host_data) override;
  void copy_to_host(const backend::TensorView& src, float* dst) override;

  void matmul(const backend::TensorView& w, const backend::TensorView& x, backend::TensorView& y) override;
  void matmul_same_input(const backend::TensorView& x, std::span<const MatmulOutput> outputs) override;
  void matmul_glu(const backend::TensorView& gate_w, const backend::TensorView& up_w, const backend::TensorView& x,
                  Glu glu, backend::TensorView& gate, backend::TensorView& up) override;
  void moe_ffn(const backend::TensorView& x, std::span<const ExpertWork> experts, int64_t n_slots, Glu glu,
               backend::TensorView& out) override;
  void get_rows(const backend::TensorView& table, std::span<const int32_t> ids, backend::TensorView& out) override;
  void rms_norm(const backend::TensorView& x, const backend::TensorView& weight, float eps,
                backend::TensorView& out) override;
  void add(const backend::TensorView& a, const backend::TensorView& b, backend::TensorView& out) override;
  void add_row(backend::TensorView& x, const backend::TensorView& row) override;
  void scale(backend::TensorView& x, float factor) override;
  void swiglu(const backend::TensorView& gate, const backend::TensorView& up, backend::TensorView& out) override;
  void geglu(const backend::TensorView& gate, const backend::TensorView& up, backend::TensorView& out) override;
  void rotate_heads(backend::TensorView& x, int64_t head_dim) override;
  void rope(backend::TensorView& x, std::span<const int32_t> positions, const backend::RopeConfig& config) override;
  void store_kv(const backend::TensorView& k, const backend::TensorView& v, std::span<const backend::SequenceSlice> seqs,
                backend::KvLayer& cache) override;
  void copy_kv_block(backend::KvLayer& cache, int64_t src, int64_t dst) override;
  void read_kv_block(const backend::KvLayer& cache, int64_t block, void* host_k, void* host_v) override;
  void write_kv_block(backend::KvLayer& cache, int64_t block, const void* host_k, const void* host_v) override;
  void shift_keys(backend::KvLayer& cache, std::span<const int32_t> blocks, int32_t delta,
                  const backend::RopeConfig& config, int64_t head_dim) override;
  void attention_scores(const backend::TensorView& q, const backend::KvLayer& cache, const backend::SequenceSlice& seq,
                        int64_t first_row, const backend::AttentionConfig& config, float* scores,
                        int64_t slot_stride) override;
  void gather_kv_rows(backend::KvLayer& cache, std::span<const int32_t> src_table, std::span<const int32_t> dst_table,
                      std::span<const int32_t> keep, int64_t head_dim, int64_t value_dim) override;
  void attention(const backend::TensorView& q, const backend::KvLayer& cache,
                 std::span<const backend::SequenceSlice> seqs, const backend::AttentionConfig& config,
                 backend::TensorView& out) override;

 private:
  struct Weight {
    size_t bytes = 0;
    const void* host = nullptr;
    std::string name;  // "blk.3.ffn_down", without ".weight"; empty until name_weights
    int part = kUnknownPart;
  };
  // The weight whose memory holds `data` (a view may start inside one: a MoE expert's matrix).
  const Weight* weight_at(const void* data) const;
  // An op on weights: its name ("matmul attn_q+attn_k+attn_v") and part, looked up once per
  // weight and cached, so a recorded step spends a hash lookup per op on bookkeeping.
  struct WeightOp {
    uint32_t name = 0;
    int part = kUnknownPart;
  };
  WeightOp weight_op(std::string_view kind, std::span<const backend::TensorView* const> weights);
  uint32_t intern(const std::string& name);
  // Runs fn and records it as op `name` with `cost` (computed only when recording).
  template <typename Cost, typename Fn>
  void timed(uint32_t name, Cost&& cost, Fn&& fn);
  void on_worker_span(unsigned worker, int64_t begin_ns, int64_t end_ns, int64_t tasks) override;

  std::unique_ptr<backend::Backend> inner_;
  ThreadPool* pool_;
  std::map<uintptr_t, Weight> weights_;  // by the first byte of the backend's copy
  std::vector<std::string> op_names_;
  std::unordered_map<std::string, uint32_t> op_ids_;
  // By (the op kind's literal, first and last weight, count): no allocation to look one up.
  std::map<std::tuple<const char*, const void*, const void*, size_t>, WeightOp> weight_ops_;
  // The ops without weights, interned once.
  uint32_t get_rows_, rms_norm_, add_, add_row_, scale_, swiglu_, geglu_, rotate_heads_, rope_, store_kv_, attention_,
      copy_to_host_, kv_block_move_, shift_keys_, attention_scores_, gather_kv_rows_;
  bool recording_ = false;
  int part_ = kUnknownPart;
  StepRecording step_;
  // Each worker appends to its own list (no lock on the recording path).
  std::vector<std::vector<WorkerSpan>> worker_spans_;
};

}  // namespace lumen::profile
