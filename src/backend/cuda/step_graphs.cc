#include "backend/cuda/step_graphs.h"

#include "backend/cuda/device_memory.h"
#include "backend/cuda/graph_capture.h"

namespace lumen::backend::cuda {

StepGraphs::~StepGraphs() { clear(); }

void StepGraphs::clear() {
  for (auto& [shape, recording] : recordings_) {
    if (recording.exec != nullptr) cudaGraphExecDestroy(recording.exec);
  }
  recordings_.clear();
}

void StepGraphs::run_eager(const std::function<void()>& ops, Eager why) {
  ++stats_.eager;
  switch (why) {
    case Eager::Off: break;
    case Eager::NotDecode: ++stats_.eager_not_decode; break;
    case Eager::Warming: ++stats_.eager_warming; break;
    case Eager::Refused: ++stats_.eager_refused; break;
    case Eager::OverLimit: ++stats_.eager_over_limit; break;
  }
  ops();
}

void StepGraphs::run(const StepShape& shape, const std::function<void()>& ops, const std::function<void()>& reset) {
  auto it = recordings_.find(shape);
  if (it == recordings_.end()) {
    if (recordings_.size() >= kMaxRecordings) return run_eager(ops, Eager::OverLimit);
    it = recordings_.emplace(shape, Recording{}).first;
  }
  Recording& recording = it->second;
  const uint64_t epoch = allocation_epoch();
  if (recording.exec != nullptr) {
    if (recording.epoch == epoch) {
      LUMEN_CUDA_CHECK(cudaGraphLaunch(recording.exec, stream_));
      ++stats_.replayed;
      return;
    }
    // Recorded before memory moved: its addresses may be stale. Warm up again.
    LUMEN_CUDA_CHECK(cudaGraphExecDestroy(recording.exec));
    recording.exec = nullptr;
    recording.ran = false;
  }
  if (recording.refused || !recording.ran || recording.epoch != epoch) {
    run_eager(ops, recording.refused ? Eager::Refused : Eager::Warming);
    recording.ran = true;
    recording.epoch = allocation_epoch();  // what the next step must still see to record
    return;
  }
  if (record(recording, ops)) {
    ++stats_.recorded;
    return;
  }
  ++stats_.refused;
  recording.refused = true;
  reset();
  run_eager(ops, Eager::Refused);
}

bool StepGraphs::record(Recording& recording, const std::function<void()>& ops) {
  // Thread-local: only this thread's calls that a capture cannot hold are refused (another
  // thread's backend on another device is not disturbed).
  LUMEN_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  set_capturing(true);
  try {
    ops();
  } catch (...) {
    // CaptureUnsafe, or a CUDA call the capture refused: the eager run that follows tells a
    // real error (it throws again) from one of recording.
    abandon_capture();
    return false;
  }
  set_capturing(false);
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream_, &graph) != cudaSuccess || graph == nullptr) {
    if (graph != nullptr) cudaGraphDestroy(graph);
    cudaGetLastError();
    return false;
  }
  cudaGraphExec_t exec = nullptr;
  const cudaError_t instantiated = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  if (instantiated != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  recording.exec = exec;
  recording.epoch = allocation_epoch();
  LUMEN_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
  return true;
}

void StepGraphs::abandon_capture() {
  set_capturing(false);
  cudaGraph_t graph = nullptr;
  cudaStreamEndCapture(stream_, &graph);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaGetLastError();
}

}  // namespace lumen::backend::cuda
