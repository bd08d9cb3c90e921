// CudaBackend's step boundary (backend/backend.h): the step's metadata uploaded once
// (step_uploads.h), its ops run or replayed from a CUDA graph (step_graphs.h), with the greedy rows'
// argmax launched at their end, and at the step's end the logits copied back, greedy rows as their
// argmax alone and confined draws' rows as their leading candidates (StepMetadata::row_forms).
#include <cstddef>
#include <cstring>

#include "backend/cuda/cuda_backend_state.h"
#include "backend/cuda/cuda_ops_common.h"
#include "backend/cuda/kernels.h"
#include "backend/cuda/op_hold.h"

namespace lumen::backend {

using cuda::check_cuda;

// The kernel writes backend::RowArgmax's entries through its own copy of the layout.
static_assert(sizeof(cuda::DeviceRowArgmax) == sizeof(RowArgmax) &&
              offsetof(cuda::DeviceRowArgmax, token) == offsetof(RowArgmax, token) &&
              offsetof(cuda::DeviceRowArgmax, value) == offsetof(RowArgmax, value) &&
              offsetof(cuda::DeviceRowArgmax, finite) == offsetof(RowArgmax, finite));
static_assert(sizeof(cuda::DeviceRowLeading) == sizeof(RowLeading) &&
              offsetof(cuda::DeviceRowLeading, count) == offsetof(RowLeading, count) &&
              offsetof(cuda::DeviceRowLeading, finite) == offsetof(RowLeading, finite) &&
              offsetof(cuda::DeviceRowLeading, total) == offsetof(RowLeading, total) &&
              offsetof(cuda::DeviceRowLeading, ids) == offsetof(RowLeading, ids) &&
              offsetof(cuda::DeviceRowLeading, logits) == offsetof(RowLeading, logits) && kLeadingCandidates == 64);

namespace {

// Whether the step's rows go back as their argmax (a greedy row's; every row is reduced, a few
// microseconds, and only the flagged rows' entries are read).
bool reduces_to_argmax(const CudaBackend::State& s, const StepMetadata& step) {
  return s.options.device_argmax && step.argmax != nullptr && !step.row_forms.empty() && step.logits != nullptr &&
         !step.logit_rows.empty();
}

void launch_step_argmax(CudaBackend::State& s, const StepMetadata& step) {
  cuda::launch_row_argmax(s.step->logits(), step.logit_width, static_cast<int64_t>(step.logit_rows.size()),
                          s.step->argmax(), s.stream);
  s.check_launch("row_argmax");
}

}  // namespace

void CudaBackend::do_begin_step(const StepMetadata& step) {
  if (state_->op_timer->enabled()) state_->op_timer->hold(state_->stream);
  state_->step_timer->started(state_->stream);
  state_->step->begin(step);
  state_->step_argmax_queued = false;
}

TensorView CudaBackend::do_step_logits() {
  return f32_matrix(state_->step->logits(), step().logit_width, static_cast<int64_t>(step().logit_rows.size()));
}

void CudaBackend::do_end_step() {
  State& s = *state_;
  cuda::release_op_hold();  // the copies back may be to pageable memory, which waits
  s.step->end();
  const StepMetadata& step = this->step();
  if (step.logits == nullptr || step.logit_rows.empty()) {  // nothing comes back: no wait
    s.step_timer->discard();
    return;
  }
  const size_t width = static_cast<size_t>(step.logit_width);
  const size_t n_rows = step.logit_rows.size();
  const auto form = [&](size_t r) {
    return step.row_forms.empty() ? RowForm::Whole : static_cast<RowForm>(step.row_forms[r]);
  };
  const bool reduce = reduces_to_argmax(s, step);
  const std::span<const int32_t> leading_rows = s.step->leading_rows();
  const bool reduce_leading = s.options.device_leading && !leading_rows.empty();
  if (reduce) {
    // The ops of a step through run_replayable queued it at their end; others, here.
    if (!s.step_argmax_queued) launch_step_argmax(s, step);
    check_cuda(
        cudaMemcpyAsync(step.argmax, s.step->argmax(), n_rows * sizeof(RowArgmax), cudaMemcpyDeviceToHost, s.stream),
        "cudaMemcpyAsync");
  }
  if (reduce_leading) {
    cuda::launch_row_leading(s.step->logits(), step.logit_width, s.step->leading_requests(),
                             static_cast<int64_t>(leading_rows.size()), s.step->leading(), s.stream);
    s.check_launch("row_leading");
    check_cuda(cudaMemcpyAsync(s.step->leading_host(), s.step->leading(),
                               leading_rows.size() * sizeof(cuda::DeviceRowLeading), cudaMemcpyDeviceToHost, s.stream),
               "cudaMemcpyAsync");
  }
  // The rows wanted whole, a copy per run of them (without reduced rows: one copy), then the
  // step's one wait for the device.
  const auto reduced = [&](size_t r) {
    return (reduce && form(r) == RowForm::Argmax) || (reduce_leading && form(r) == RowForm::Leading);
  };
  for (size_t first = 0; first < n_rows;) {
    if (reduced(first)) {
      ++first;
      continue;
    }
    size_t end = first;
    while (end < n_rows && !reduced(end)) ++end;
    check_cuda(cudaMemcpyAsync(step.logits + first * width, s.step->logits() + first * width,
                               (end - first) * width * sizeof(float), cudaMemcpyDeviceToHost, s.stream),
               "cudaMemcpyAsync");
    first = end;
  }
  s.step_timer->stopped(s.stream);
  synchronize();
  s.step_timer->finished();
  if (reduce_leading) {  // each to its row's entry
    for (size_t i = 0; i < leading_rows.size(); ++i) {
      std::memcpy(static_cast<void*>(&step.leading[leading_rows[i]]), &s.step->leading_host()[i], sizeof(RowLeading));
    }
  }
}

void CudaBackend::do_copy_logit_rows(std::span<const int32_t> rows, int64_t width, float* logits) {
  State& s = *state_;
  // The last step's logits stay in the device buffer until the next step's output head.
  cuda::release_op_hold();  // a copy to or from host memory may wait for the device
  const auto n = static_cast<size_t>(width);
  for (const int32_t row : rows) {
    const size_t at = static_cast<size_t>(row) * n;
    check_cuda(cudaMemcpyAsync(logits + at, s.step->logits() + at, n * sizeof(float), cudaMemcpyDeviceToHost, s.stream),
               "cudaMemcpyAsync");
  }
  synchronize();
}

void CudaBackend::do_run_replayable(const std::function<void()>& ops) {
  State& s = *state_;
  // The rows' argmax joins the step's ops, so a replayed step is one graph launch and its copy
  // back (the logits and argmax buffers are the step's fixed device memory).
  const bool argmax = reduces_to_argmax(s, step());
  const std::function<void()> step_ops = [&] {
    ops();
    if (argmax) launch_step_argmax(s, step());
  };
  s.step_argmax_queued = argmax;
  if (!s.options.step_graphs) return s.graphs->run_eager(step_ops, cuda::StepGraphs::Eager::Off);
  std::optional<cuda::StepShape> shape = s.step->replay_shape();
  if (!shape) return s.graphs->run_eager(step_ops, cuda::StepGraphs::Eager::NotDecode);
  shape->argmax = argmax;
  // After a recording is given up: the host plan caches may name a plan whose upload was only
  // recorded, never run.
  s.graphs->run(*shape, step_ops, [&s] {
    s.plan_key.clear();
    s.prefill_plan_key.clear();
  });
}

StepReplayStats CudaBackend::do_step_replay_stats() const { return state_->graphs->stats(); }

void CudaBackend::do_abort_step() noexcept {
  cuda::release_op_hold();
  state_->step->end();
  state_->step_timer->discard();
  // Let the queued work finish before the caller reuses its arrays; a failed kernel's error was
  // (or will be) reported by the op or copy that found it.
  if (cudaStreamSynchronize(state_->stream) != cudaSuccess) cudaGetLastError();
}

}  // namespace lumen::backend
