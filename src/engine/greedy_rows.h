#pragma once
// Greedy sampling's shortcut through a step (backend::StepMetadata::argmax_only): a sequence
// whose next token is its row's argmax, and nothing more (sampling::Sampler::needs_only_argmax),
// asks the step for that argmax rather than the row. A device backend then reduces the row
// where it is and sends back 12 bytes instead of the vocabulary's logits (at 64 streams and a
// 128k vocabulary, 33 MB a step); the CPU leaves the row in place and the host reduces it here,
// the same way, so every backend's greedy tokens come from one definition.
#include <cstdint>
#include <span>

#include "backend/backend_types.h"

namespace lumen::engine {

// Whether every value is finite (not NaN, not an infinity). Branch-free, so the compiler
// vectorizes it: a pass over a row costs about what sampling's first pass does.
bool all_finite(std::span<const float> values);

// The host's reduction of a row: sampling::argmax (the lowest index among equal maxima), its
// value, and all_finite.
backend::RowArgmax host_row_argmax(std::span<const float> row);

}  // namespace lumen::engine
