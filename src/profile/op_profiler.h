#pragma once
// Records how long each op of a backend took, what it moved and computed (op_cost.h), and which
// part of the model it belongs to. It is an observer of the backend (backend/op_observer.h), not
// a wrapper: the model runs on the backend itself, with every capability it has, and profiling
// off costs nothing because no observer is attached.
//
// Parts: each weight's data pointer is mapped to its GGUF tensor name (name_weights), and an op
// with a named weight sets the current part ("blk.7.attn_q.weight": layer 7); the ops between
// (rope, attention, the residual add) belong to the part of the last named weight before them,
// which is the order a transformer layer runs in.
//
// Times come from the backend's own op clock (Backend::time_ops): the host's on the CPU, whose
// ops are done when they return; a device's events on CUDA, whose ops only queue their work
// (there a recorded step is the device's span from its first op's start to its last op's end,
// laid out from the first op's host start, and the gaps between ops are the device's idle time).
// A backend without an op clock is timed on the host around each call.
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "gguf/file.h"
#include "profile/op_record.h"
#include "util/thread_pool.h"

namespace lumen::profile {

class OpProfiler final : public backend::OpObserver, private WorkerSpanObserver {
 public:
  // Observes `backend` from now on (attach before the model's weights are uploaded, so they
  // can be named); `pool`: its worker threads, to record their task spans (null: none).
  OpProfiler(backend::Backend& backend, ThreadPool* pool);
  ~OpProfiler() override;
  OpProfiler(const OpProfiler&) = delete;
  OpProfiler& operator=(const OpProfiler&) = delete;

  // Names every weight uploaded so far by the GGUF tensor its host data came from.
  void name_weights(const gguf::GgufFile& file);

  // Recording is off until start_recording; stop_recording returns what ran in between.
  void start_recording();
  StepRecording stop_recording();
  const std::string& op_name(uint32_t id) const { return op_names_[id]; }

  void before_op(const backend::OpCall& call) override;
  void after_op(const backend::OpCall& call) override;

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
  // The recorded name of `call` (setting the current part when it names a weight), or -1 for
  // calls that are not recorded (allocation, the step boundary).
  int64_t op_id(const backend::OpCall& call);
  void on_worker_span(unsigned worker, int64_t begin_ns, int64_t end_ns, int64_t tasks) override;
  // Replaces the recorded ops' times by the op clock's `marks` (two per op: its start and end).
  void apply_op_clock(const std::vector<double>& marks);

  backend::Backend& backend_;
  ThreadPool* pool_;
  std::map<uintptr_t, Weight> weights_;  // by the first byte of the backend's copy
  std::vector<std::string> op_names_;
  std::unordered_map<std::string, uint32_t> op_ids_;
  // By (the op kind's literal, first and last weight, count): no allocation to look one up.
  std::map<std::tuple<const char*, const void*, const void*, size_t>, WeightOp> weight_ops_;
  // The ops without weights, interned once, by backend::OpKind.
  std::vector<int64_t> plain_ops_;
  bool recording_ = false;
  bool on_device_ = false;  // the backend's work runs beside the host (device_memory())
  bool op_clock_ = false;   // recording with the backend's op clock (time_ops)
  int part_ = kUnknownPart;
  int64_t op_begin_ns_ = 0;  // before_op of the op running now
  int64_t op_name_ = -1;
  int depth_ = 0;  // ops open now (one inside another: a composed op's parts)
  StepRecording step_;
  // Each worker appends to its own list (no lock on the recording path).
  std::vector<std::vector<WorkerSpan>> worker_spans_;
};

}  // namespace lumen::profile
