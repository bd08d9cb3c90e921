#include "engine/gpu_layers_split.h"

#include <algorithm>

#include "model/gpu_layers.h"
#include "util/error.h"

namespace lumen::engine {

void check_gpu_layers_option(const ModelOptions& options) {
  if (options.n_gpu_layers == kAllGpuLayers) return;
  if (options.n_gpu_layers < kAutoGpuLayers) {
    fail("--n-gpu-layers {}: a layer count of 0 or more, or auto", options.n_gpu_layers);
  }
  if (options.device == "cpu") {
    fail(
        "--n-gpu-layers puts layers on a GPU, and --device cpu runs every layer on the CPU already: use --device "
        "cuda with it");
  }
  if (options.tensor_parallel_size != 1 || options.pipeline_parallel_size != 1) {
    fail("--n-gpu-layers splits a model in one process; it does not combine with tensor or pipeline parallelism");
  }
  if (options.context_parallel_size != 1) {
    fail(
        "--n-gpu-layers splits a model in one process; it does not combine with context parallelism "
        "(--context-parallel-size)");
  }
  if (!(options.gpu_layers_memory_fraction > 0.0 && options.gpu_layers_memory_fraction <= 0.98)) {
    fail("the device memory share for --n-gpu-layers auto must be in (0, 0.98], not {}",
         options.gpu_layers_memory_fraction);
  }
}

std::function<model::BackendSplit(const gguf::GgufFile&, const model::HParams&)> gpu_layers_split(
    const ModelOptions& options, backend::Backend& device, int* chosen) {
  const int asked = options.n_gpu_layers;
  const int64_t context = options.gpu_layers_context;
  const double fraction = options.gpu_layers_memory_fraction;
  return [asked, context, fraction, &device, chosen](const gguf::GgufFile& file,
                                                     const model::HParams& hp) -> model::BackendSplit {
    int64_t units = asked;
    if (asked == kAutoGpuLayers) {
      const std::optional<backend::DeviceMemory> memory = device.device_memory();
      if (!memory) fail("--n-gpu-layers auto: the {} backend reports no device memory to fit layers in", device.name());
      const int64_t tokens = context > 0 ? context : std::min<int64_t>(static_cast<int64_t>(hp.context_length), 4096);
      const auto budget = static_cast<uint64_t>(static_cast<double>(memory->free_bytes) * fraction);
      units = model::auto_gpu_layers(budget, kGpuLayersReserveBytes,
                                     model::gpu_layer_bytes(file, hp, tokens, tensor::DType::F16));
    }
    *chosen = static_cast<int>(units);
    if (units == 0) return {};
    return {&device, model::first_gpu_layer(hp.block_count, units)};
  };
}

}  // namespace lumen::engine
