// Batch-1 timing of a model on the CUDA backend, for scripts/gpu_check.sh (until the CLI has a
// backend flag): a prompt prefill, then greedy decode steps, one JSON object on stdout.
//
//   lumen_cuda_decode_bench MODEL.gguf [decode_tokens=128] [prompt_tokens=512] [all_gemv=0]
//
// bytes_per_token counts what one decode step must read: every weight tensor except the token
// embedding (one row of it is read), unless the output projection is tied to it, plus the K/V
// of every earlier position (f16). Dividing by the step time gives the effective bandwidth to
// compare with the device's peak (H100 SXM about 3.35 TB/s, H200 about 4.8 TB/s).
#include <cuda_runtime_api.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include "backend/cuda/cuda_backend.h"
#include "engine/single_sequence_forward.h"
#include "engine/loaded_model.h"

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

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

    const int context = prompt_tokens + decode_tokens + 16;
    lumen::engine::SingleSequenceForward generator(model, backend, context);
    // A prompt of arbitrary (valid) token ids: timing does not depend on their meaning.
    std::vector<int32_t> prompt(static_cast<size_t>(prompt_tokens));
    for (size_t i = 0; i < prompt.size(); ++i)
      prompt[i] = static_cast<int32_t>((i * 7919 + 13) % hp.vocab_size);

    // Warm-up (allocations, cuBLAS, first launches), then the measured prefill.
    generator.feed(std::span<const int32_t>(prompt.data(), std::min<size_t>(prompt.size(), 16)));
    generator.reset();
    const auto prefill_start = Clock::now();
    std::span<const float> logits = generator.feed(prompt);
    const double prefill_s = seconds_since(prefill_start);

    int32_t token = argmax(logits);
    for (int i = 0; i < 3; ++i) token = argmax(generator.feed(std::span<const int32_t>(&token, 1)));
    const auto decode_start = Clock::now();
    for (int i = 0; i < decode_tokens; ++i)
      token = argmax(generator.feed(std::span<const int32_t>(&token, 1)));
    const double decode_s = seconds_since(decode_start);

    const double per_token = decode_s / decode_tokens;
    const double mean_position = prompt_tokens + 3 + decode_tokens / 2.0;
    const double bytes_per_token = static_cast<double>(weight_bytes) +
                                   mean_position * static_cast<double>(kv_bytes_per_position);
    fmt::print(
        "{{\"device\": \"{}\", \"model\": \"{}\", \"max_gemv_tokens\": {}, \"gemv\": \"{}\", \"load_s\": {:.3f}, "
        "\"prompt_tokens\": {}, \"prefill_s\": {:.4f}, \"prefill_tokens_per_s\": {:.1f}, "
        "\"decode_tokens\": {}, \"decode_ms_per_token\": {:.4f}, \"decode_tokens_per_s\": {:.2f}, "
        "\"bytes_per_token\": {:.0f}, \"effective_gb_per_s\": {:.1f}}}\n",
        prop.name, path, options.max_gemv_tokens, backend.options().streaming_gemv ? "stream" : "warp", load_s,
        prompt_tokens, prefill_s, prompt_tokens / prefill_s, decode_tokens, per_token * 1e3, 1.0 / per_token,
        bytes_per_token, bytes_per_token / per_token / 1e9);
    return 0;
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
}
