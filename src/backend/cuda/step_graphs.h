#pragma once
// Internal to the CUDA backend: decode steps recorded once as CUDA graphs and replayed. A decode
// step of a 1B model is a few hundred kernel launches; queuing them took the host 1.3-1.5 ms on
// an H200, more than llama.cpp's whole step (0.97 ms, BENCHMARKS.md, 2026-11-28). Launching a
// recording of them costs one call.
//
// A step can be replayed when its launches depend only on its shape (StepShape): its host
// arrays reach the device through the step's one upload at fixed addresses (step_uploads.h), its
// attention derives its work from device memory (decode_attention.h), and everything else it
// reads is device memory that has not moved since the recording (the allocation epoch,
// graph_capture.h). The transformer says which steps are such (Backend::run_replayable); only
// decode steps are laid out for it. The shape includes the step's owners (StepMetadata::model and
// kv_cache): two engines over one model, or a draft model beside its target, allocate their
// caches up front and then run steps of one shape over different memory, and a recording of one
// replayed for the other read and wrote the wrong cache (found on the simulated device,
// tests/model/sim_step_graphs_test.cc).
//
// Per shape: the first step runs eagerly (its scratch buffers grow to size); a later one in the
// same allocation epoch is recorded, and the recording launched; the steps after that launch it.
// Anything inside the ops that a recording cannot hold throws CaptureUnsafe (graph_capture.h),
// or fails the capture: the recording is dropped, the step runs eagerly, and that shape is not
// tried again (StepReplayStats::refused counts them).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <functional>
#include <map>

#include "backend/backend.h"
#include "backend/cuda/step_uploads.h"

namespace lumen::backend::cuda {

class StepGraphs {
 public:
  explicit StepGraphs(cudaStream_t stream) : stream_(stream) {}
  ~StepGraphs();
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;

  // Runs a step of `shape` whose ops `ops` queues on the stream: by launching its recording, by
  // recording it, or eagerly (see above). `reset` forgets what the backend's host side keeps
  // between ops (caches keyed on host arrays): it is called before the ops run again after a
  // recording was given up.
  void run(const StepShape& shape, const std::function<void()>& ops, const std::function<void()>& reset);
  // Why a step runs its ops eagerly (StepReplayStats).
  // Off: the backend does not record steps (CudaBackendOptions::step_graphs).
  enum class Eager : uint8_t { Off, NotDecode, Warming, Refused, OverLimit };
  // A step that is not replayed: its ops just run (counted as eager, and why).
  void run_eager(const std::function<void()>& ops, Eager why);
  // Drops every recording (the options changed).
  void clear();
  const StepReplayStats& stats() const { return stats_; }

 private:
  // Graphs kept at most: shapes past this many run eagerly. Decode shapes differ in batch size
  // and in the split bound (a power of two per context length), so a server meets a few dozen.
  static constexpr size_t kMaxRecordings = 128;

  struct Recording {
    cudaGraphExec_t exec = nullptr;
    uint64_t epoch = 0;    // the allocation epoch it was recorded in, or its last eager run ended in
    bool ran = false;      // it ran eagerly at least once
    bool refused = false;  // recording it failed: it runs eagerly from now on
  };

  // Records `ops` and launches the recording; false (nothing launched, nothing left open) when
  // the recording had to be given up.
  bool record(Recording& recording, const std::function<void()>& ops);
  // Ends an open capture and discards what it held, clearing the error it may have left.
  void abandon_capture();

  cudaStream_t stream_;
  std::map<StepShape, Recording> recordings_;
  StepReplayStats stats_;
};

}  // namespace lumen::backend::cuda
