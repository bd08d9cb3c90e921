#pragma once
// ModelOptions::n_gpu_layers (--n-gpu-layers, -ngl) at load: the CPU backend first, the device
// second, and the split between them (model/gpu_layers.h counts the layers as llama.cpp does).
#include <functional>
#include <memory>

#include "backend/backend.h"
#include "lumen/model.h"
#include "model/backend_split.h"
#include "gguf/file.h"
#include "model/hparams.h"

namespace lumen::engine {

// Device memory kept out of the automatic choice: the activations, the logits and the
// device's own workspaces.
inline constexpr uint64_t kGpuLayersReserveBytes = uint64_t{512} << 20;

// Throws lumen::Error for an n_gpu_layers that cannot apply: a value below kAutoGpuLayers, or
// any layer count with device "cpu" (every layer runs on the CPU already).
void check_gpu_layers_option(const ModelOptions& options);

// What ModelPart::split calls once the file is open: the split for options.n_gpu_layers with
// `device` second (inactive for 0). Writes the resolved count to `*chosen`. `device` and
// `chosen` must outlive the call.
std::function<model::BackendSplit(const gguf::GgufFile&, const model::HParams&)> gpu_layers_split(
    const ModelOptions& options, backend::Backend& device, int* chosen);

}  // namespace lumen::engine
