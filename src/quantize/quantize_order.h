#pragma once
// The order llama-quantize visits (and writes) tensors in: its loader keeps them in a map
// ordered by block number ("blk.N." prefix; tensors outside blocks first), then by name. The
// per-tensor rules count tensors as they go, so Lumen visits them in the same order, and the
// output file lists them as llama-quantize's does.
#include <optional>
#include <string_view>
#include <vector>

#include "gguf/file.h"

namespace lumen::quantize {

// N for a name starting "blk.N." (as sscanf("blk.%d.") reads it), else nullopt.
std::optional<int> block_number(std::string_view name);

// Whether llama-quantize visits tensor `a` before tensor `b`.
bool quantize_order_before(std::string_view a, std::string_view b);

std::vector<const gguf::TensorInfo*> quantize_order(const gguf::GgufFile& file);

}  // namespace lumen::quantize
