#pragma once
// What `lumen bench profile` runs: a model loaded on the CPU backend (or a device's) with an
// OpProfiler observing it, and forward passes of a chosen shape recorded op by op. A prefill step is `batch`
// sequences of `tokens` new tokens each from an empty context; a decode step is `batch`
// sequences of one new token each after `context` cached tokens (every sequence its own copy of
// the same cached tokens, so the step reads batch x context positions of K/V from memory as a
// real batch would). A verification step (speculative decoding's) is one sequence of `tokens`
// new rows after `context` cached tokens with logits at every row. The step is repeated at the same positions, so every
// repetition does the same work.
#include <cstdint>
#include <memory>
#include <string>

#include "engine/loaded_model.h"
#include "lumen/engine_config.h"
#include "profile/machine_ceilings.h"
#include "profile/op_profiler.h"
#include "profile/step_breakdown.h"

namespace lumen::backend {
class CpuBackend;
}

namespace lumen::profile {

struct StepShape {
  bool decode = false;
  int64_t batch = 1;
  int64_t tokens = 1;   // new tokens per sequence (decode: 1)
  int64_t context = 0;  // cached tokens per sequence before the step (prefill: 0)
  bool verify = false;  // logits at every row (a speculative verification step), not the last

  int64_t new_tokens() const { return batch * tokens; }
  std::string label() const;  // "prefill 512", "decode batch 32 at context 512",
                              // "verify 6 rows at context 900"
};

// The weight bytes a step reads once from memory, the bound decode is measured against: every
// tensor of the file but an untied token embedding (a lookup reads one row a token), and of a MoE
// layer's expert tensors (`*_exps`) only the experts its tokens choose: with `used` of `experts`
// chosen per token, independently and uniformly, a step of T tokens reads an expected
// 1 - (1 - used / experts)^T of them (1 token: used / experts; a 512-token prompt: nearly all).
// Before this the bound counted every expert at every step, and gpt-oss-20b's decode read
// "415%" of the bandwidth.
struct WeightStream {
  double dense_bytes = 0;
  double expert_bytes = 0;  // every expert's
  uint64_t experts = 0, used = 0;
  double bytes_for(int64_t tokens) const;
};

struct ShapeProfile {
  StepShape shape;
  StepBreakdown breakdown;    // over the recorded repetitions
  double unrecorded_step_ns;  // median of as many steps run without recording
  StepRecording last;         // the last recorded step, for a timeline
  // On a device: the unrecorded steps' mean time on the device's clock (Backend::time_steps), and
  // how many of them were replayed from a recording (CUDA graphs) rather than run op by op.
  double unrecorded_device_step_ns = 0;
  uint64_t replayed_steps = 0;
};

class ProfileRun {
 public:
  // `kv_type`: the KV cache's element type (f16 unless asked). `device`: "cpu" (with `threads`
  // workers), or a device (engine::make_backend's names: "cuda", "cuda:N").
  ProfileRun(const std::string& model_path, unsigned threads, KvCacheDtype kv_cache_dtype = KvCacheDtype::F16,
             const std::string& device = "cpu");
  ~ProfileRun();

  const engine::LoadedModel& model() const { return *model_; }
  // "SmolLM2-135M-Instruct.Q4_1.gguf (llama, 30 layers, 576 embedding)".
  std::string description() const;
  unsigned threads() const;  // the CPU's workers (0 on a device)
  ThreadPool* pool();        // the CPU's (null on a device)
  bool on_device() const { return cpu_ == nullptr; }
  const std::string& op_name(uint32_t id) const { return profiler_->op_name(id); }
  // The backend the model runs on.
  backend::Backend& backend();
  // The weight bytes the model's steps stream (WeightStream).
  WeightStream weight_stream() const;

  // One warm-up step, then `repetitions` recorded and `repetitions` unrecorded ones.
  ShapeProfile profile(const StepShape& shape, int repetitions);

 private:
  std::unique_ptr<backend::Backend> backend_;
  backend::CpuBackend* cpu_ = nullptr;    // backend_, when it is the CPU's
  std::unique_ptr<OpProfiler> profiler_;  // observes backend_
  std::unique_ptr<engine::LoadedModel> model_;
  std::string model_path_;
  tensor::DType kv_type_;
};

}  // namespace lumen::profile
