#pragma once
// `--n-gpu-layers N` (llama.cpp's -ngl; main.cc spells -ngl as it): how many of the model's
// layers and its output head run on the GPU, the rest on the CPU (ModelOptions::n_gpu_layers).
// A count, "auto" (as many as fit the device's free memory) or "all"; unset: all.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <string>
#include <string_view>

#include "lumen/engine_config.h"
#include "lumen/model.h"
#include "util/error.h"

namespace lumen::cli {

inline int gpu_layers_value(std::string_view text) {
  if (text.empty() || text == "all") return kAllGpuLayers;
  if (text == "auto") return kAutoGpuLayers;
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size() || value < 0) {
    fail("--n-gpu-layers {}: a number of layers (0 or more), auto or all", text);
  }
  return value;
}

// `options` with --n-gpu-layers auto sized for the engine's settings: K/V room for
// --max-model-len tokens per layer (when given) and --gpu-memory-utilization of the free memory.
inline ModelOptions sized_for(ModelOptions options, const EngineConfig& config) {
  options.gpu_layers_context = config.max_model_len;
  options.gpu_layers_memory_fraction = config.gpu_memory_utilization;
  return options;
}

// What `command` says on stderr of a split model (--n-gpu-layers, auto resolved); nothing else.
inline void print_gpu_layers(std::string_view command, const ModelInfo& info) {
  if (info.n_gpu_layers == kAllGpuLayers) return;
  fmt::print(stderr,
             "lumen {}: --n-gpu-layers {}: that many of the model's layers (the output layer first) on the "
             "GPU, the embedding and the rest on the CPU\n",
             command, info.n_gpu_layers);
}

}  // namespace lumen::cli
