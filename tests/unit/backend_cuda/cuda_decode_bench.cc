// Batch-1 timing of a model on the CUDA backend, for scripts/gpu_check.sh (until the CLI has a
// backend flag): a prompt prefill, then greedy decode steps, one JSON object on stdout.
//
//   lumen_cuda_decode_bench MODEL.gguf [decode_tokens=128] [prompt_tokens=512] [all_gemv=0]
//
// bytes_per_token counts what one decode step must read: every weight tensor except the token
// embedding (one row of it is read), unless the output projection is tied to it, plus the K/V
// of every earlier position (f16). Dividing by the step time gives the effective bandwidth to
// compare with the device's peak (H100 SXM about 3.35 TB/s, H200 about 4.8 TB/s).
//
// Where a decode step's time goes, without a profiler: an observer times each op's host side
// (argument checks, kernel launches), and the time from begin_step to end_step is the step's
// enqueue time. Enqueue time close to the step time means the host is the bottleneck (launch
// overhead: what CUDA graphs remove); much less means the kernels are. The prompt is prefilled
// once more with the device waited for around every op ("prefill_op_us": calls and microseconds
// per kind of op), to show what a prefill's time is spent on. With
// device_ms_per_step is a step's device time alone (CUDA events from begin_step to the last copy
// back, over the same number of steps run once more: device_timed_ms_per_token is their wall
// time); with replayed steps the difference is the host's share in series. With
// LUMEN_BENCH_PROFILE_STEP=1 one more decode step runs between cudaProfilerStart and
// cudaProfilerStop, for `ncu --profile-from-start off` (per-kernel device time).
//
// Each greedy step asks for its token as the engine does (SingleSequenceForward::feed_greedy: the
// device reduces the row and copies back its argmax alone, "rows": "argmax"); before 2026-11-30
// the bench copied every step's whole row back and took its argmax on the host, which
// LUMEN_BENCH_WHOLE_ROWS=1 still does ("rows": "whole"), to compare with those numbers.
#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <functional>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "backend/op_observer.h"
#include "engine/single_sequence_forward.h"
#include "engine/loaded_model.h"

namespace {

using Clock = std::chrono::steady_clock;

bool whole_rows() {
  const char* v = std::getenv("LUMEN_BENCH_WHOLE_ROWS");
  return v != nullptr && *v == '1';
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

const char* gemv_name(lumen::backend::GemvKernels kernels) {
  switch (kernels) {
    case lumen::backend::GemvKernels::Warp: return "warp";
    case lumen::backend::GemvKernels::Stream: return "stream";
    case lumen::backend::GemvKernels::Tiled: return "tiled";
    case lumen::backend::GemvKernels::Pipelined: return "pipelined";
    case lumen::backend::GemvKernels::ByMeasurement: break;
  }
  return "auto";
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// Host time inside each kind of op, and each step's enqueue (begin_step to end_step) and wait
// (end_step: the logits' copy back and the one synchronization). With `sync` set (the device's
// synchronize), the device is waited for before and after each op: each op's time is then its
// kernels' too (plus a wait's few microseconds), which is how the prefill breakdown is taken.
class HostTimes : public lumen::backend::OpObserver {
 public:
  static constexpr size_t kKinds = lumen::backend::kOpKindCount;
  explicit HostTimes(std::function<void()> wait = {}) : sync(std::move(wait)) {}
  void before_op(const lumen::backend::OpCall& call) override {
    if (sync) sync();
    const auto now = Clock::now();
    if (call.kind == lumen::backend::OpKind::BeginStep) step_start_ = now;
    if (call.kind == lumen::backend::OpKind::EndStep) enqueue_s += seconds_between(step_start_, now);
    op_start_ = now;
  }
  void after_op(const lumen::backend::OpCall& call) override {
    if (sync) sync();
    const auto k = static_cast<size_t>(call.kind);
    seconds[k] += seconds_between(op_start_, Clock::now());
    calls[k] += 1;
    if (call.kind == lumen::backend::OpKind::EndStep) steps += 1;
  }
  // {"matmul": [calls per step, host us per step], ...}, the kinds that ran.
  std::string json() const {
    std::string out = "{";
    for (size_t k = 0; k < kKinds; ++k) {
      if (calls[k] == 0) continue;
      out += fmt::format("{}\"{}\": [{:.1f}, {:.1f}]", out.size() > 1 ? ", " : "",
                         lumen::backend::op_name(static_cast<lumen::backend::OpKind>(k)),
                         static_cast<double>(calls[k]) / static_cast<double>(steps),
                         seconds[k] * 1e6 / static_cast<double>(steps));
    }
    return out + "}";
  }
  std::array<double, kKinds> seconds{};
  std::array<int64_t, kKinds> calls{};
  int64_t steps = 0;
  double enqueue_s = 0.0;
  std::function<void()> sync;

 private:
  static double seconds_between(Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  }
  Clock::time_point step_start_{};
  Clock::time_point op_start_{};
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    fmt::print(stderr, "usage: {} MODEL.gguf [decode_tokens] [prompt_tokens] [all_gemv]\n",
               argv[0]);
    return 2;
  }
  try {
    const std::string path = argv[1];
    const int decode_tokens = argc > 2 ? std::atoi(argv[2]) : 128;
    const int prompt_tokens = argc > 3 ? std::atoi(argv[3]) : 512;
    lumen::backend::CudaBackendOptions options;
    if (argc > 4 && std::atoi(argv[4]) != 0) options.max_gemv_tokens = 1 << 20;
    if (lumen::backend::cuda_device_count() == 0) {
      fmt::print(stderr, "no CUDA device\n");
      return 1;
    }
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, 0);

    const auto load_start = Clock::now();
    lumen::backend::CudaBackend backend(0, options);
    lumen::engine::LoadedModel model = lumen::engine::LoadedModel::load(path, backend);
    backend.synchronize();
    const double load_s = seconds_since(load_start);

    uint64_t weight_bytes = 0;
    const bool tied = model.file->find_tensor("output.weight") == nullptr;
    for (const auto& t : model.file->tensors()) {
      if (t.name == "token_embd.weight" && !tied) continue;
      weight_bytes += t.bytes;
    }
    const auto& hp = model.hparams;
    const uint64_t kv_bytes_per_position = 2 * hp.block_count * hp.head_dim * hp.head_count_kv * 2;

    // The prompt, 3 warm-up steps, the timed, device-timed and observed loops, the profiled step.
    const int context = prompt_tokens + 3 * decode_tokens + 16;
    lumen::engine::SingleSequenceForward generator(model, backend, context);
    // One greedy decode step after `token`.
    const bool whole = whole_rows();
    const auto next = [&generator, whole](int32_t token) {
      const std::span<const int32_t> one(&token, 1);
      return whole ? argmax(generator.feed(one)) : generator.feed_greedy(one);
    };
    // A prompt of arbitrary (valid) token ids: timing does not depend on their meaning.
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
    for (size_t i = 0; i < prompt.size(); ++i)
      prompt[i] = static_cast<int32_t>((i * 7919 + 13) % hp.vocab_size);

    // Warm-up (allocations, cuBLAS, first launches), then the measured prefill.
    generator.feed(std::span<const int32_t>(prompt.data(), std::min<size_t>(prompt.size(), 16)));
    generator.reset();
    const uint64_t int8_before = backend.int8_gemm_launches();
    const auto prefill_start = Clock::now();
    std::span<const float> logits = generator.feed(prompt);
    const double prefill_s = seconds_since(prefill_start);
    // Matmuls of the measured prefill on the int8 GEMM (LUMEN_CUDA_INT8_GEMM=1).
    const uint64_t prefill_int8_matmuls = backend.int8_gemm_launches() - int8_before;
    // The same prefill again, each op waited for: where a prefill's time goes, per kind of op.
    std::vector<float> prompt_logits(logits.begin(), logits.end());
    generator.reset();
    HostTimes prefill_ops([&backend] { backend.synchronize(); });
    backend.add_observer(&prefill_ops);
    generator.feed(prompt);
    backend.remove_observer(&prefill_ops);
    logits = prompt_logits;

    int32_t token = argmax(logits);
    for (int i = 0; i < 3; ++i) token = next(token);
    // The timed loop, without the observer (it costs a clock read per op), then the same number
    // of steps with it, for the breakdown.
    const uint64_t replayed_before = backend.step_replay_stats().replayed;
    const uint64_t prequantized_before = backend.prequantized_inputs();
    const uint64_t grouped_before = backend.grouped_gemv_launches();
    const auto decode_start = Clock::now();
    for (int i = 0; i < decode_tokens; ++i) token = next(token);
    const double decode_s = seconds_since(decode_start);
    // Of the timed steps, how many were replayed from a CUDA graph (LUMEN_CUDA_GRAPHS=1).
    const uint64_t replayed = backend.step_replay_stats().replayed - replayed_before;
    // GEMVs whose input its producer quantized (LUMEN_CUDA_FUSED_QUANTIZE=1), per timed step;
    // counted on the host, so replayed steps add none: graphs record the first step's choice.
    const double prequantized_per_token =
        static_cast<double>(backend.prequantized_inputs() - prequantized_before) / decode_tokens;
    // Launches of several GEMVs (LUMEN_CUDA_GROUPED_GEMV=1) per timed step, counted the same way.
    const double grouped_per_token =
        static_cast<double>(backend.grouped_gemv_launches() - grouped_before) / decode_tokens;
    // The same steps once more with each one's device time taken (CUDA events, no observer, so
    // replayed steps stay replayed): the step time minus it is what the host adds in series.
    backend.time_steps(true);
    const auto timed_start = Clock::now();
    for (int i = 0; i < decode_tokens; ++i) token = next(token);
    const double timed_s = seconds_since(timed_start);
    backend.time_steps(false);
    const auto device_time = backend.step_device_time();
    const double device_ms_per_step =
        device_time.steps > 0 ? device_time.seconds * 1e3 / static_cast<double>(device_time.steps) : 0.0;
    HostTimes host;
    backend.add_observer(&host);
    const auto observed_start = Clock::now();
    for (int i = 0; i < decode_tokens; ++i) token = next(token);
    const double observed_s = seconds_since(observed_start);
    backend.remove_observer(&host);
    if (const char* profile = std::getenv("LUMEN_BENCH_PROFILE_STEP"); profile != nullptr && *profile == '1') {
      cudaProfilerStart();
      token = next(token);
      cudaProfilerStop();
    }

    const double per_token = decode_s / decode_tokens;
    const double mean_position = prompt_tokens + 3 + decode_tokens / 2.0;
    const double bytes_per_token = static_cast<double>(weight_bytes) +
                                   mean_position * static_cast<double>(kv_bytes_per_position);
    fmt::print(
        "{{\"device\": \"{}\", \"model\": \"{}\", \"rows\": \"{}\", \"max_gemv_tokens\": {}, \"int8_gemm\": {}, "
        "\"prefill_int8_matmuls\": {}, \"gemv\": \"{}\", \"add_rms_norm\": {}, "
        "\"exact_attention\": {}, \"tensor_core_prefill\": {}, \"fused_input_quantization\": {}, \"rope_loads_first\": "
        "{}, \"grouped_gemv\": {}, \"grouped_launches_per_token\": {:.2f}, \"rope_store_kv\": {}, \"routed_moe\": {}, "
        "\"moe_gemv_macs_per_expert\": {}, \"moe_device_gemm\": {}, "
        "\"prequantized_per_token\": {:.2f}, \"step_graphs\": {}, \"dependent_launch\": {}, \"fused_combine\": {}, "
        "\"glu_epilogue\": {}, "
        "\"replayed_steps\": {}, "
        "\"refused_recordings\": {}, "
        "\"load_s\": {:.3f}, "
        "\"prompt_tokens\": {}, \"prefill_s\": {:.4f}, \"prefill_tokens_per_s\": {:.1f}, "
        "\"decode_tokens\": {}, \"decode_ms_per_token\": {:.4f}, \"decode_tokens_per_s\": {:.2f}, "
        "\"bytes_per_token\": {:.0f}, \"effective_gb_per_s\": {:.1f}, \"observed_ms_per_token\": {:.4f}, "
        "\"enqueue_ms_per_token\": {:.4f}, \"device_ms_per_step\": {:.4f}, \"device_timed_ms_per_token\": {:.4f}, "
        "\"device_timed_steps\": {}, \"host_op_us_per_token\": {}, \"prefill_op_us\": {}}}\n",
        prop.name, path, whole ? "whole" : "argmax", backend.options().max_gemv_tokens, backend.options().int8_gemm,
        prefill_int8_matmuls, gemv_name(backend.options().gemv), backend.options().fused_add_rms_norm,
        backend.options().exact_f16_attention, backend.options().tensor_core_prefill,
        backend.options().fused_input_quantization, backend.options().rope_loads_first, backend.options().grouped_gemv,
        grouped_per_token, backend.options().fused_rope_store_kv, backend.options().routed_moe,
        backend.options().moe_gemv_macs_per_expert, backend.options().moe_device_gemm, prequantized_per_token,
        backend.options().step_graphs, backend.dependent_launches(), backend.options().fused_attention_combine,
        backend.options().glu_epilogue, replayed, backend.step_replay_stats().refused, load_s, prompt_tokens, prefill_s,
        prompt_tokens / prefill_s, decode_tokens, per_token * 1e3, 1.0 / per_token, bytes_per_token,
        bytes_per_token / per_token / 1e9, observed_s / decode_tokens * 1e3,
        host.enqueue_s / static_cast<double>(std::max<int64_t>(host.steps, 1)) * 1e3, device_ms_per_step,
        timed_s / decode_tokens * 1e3, device_time.steps, host.json(), prefill_ops.json());
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
