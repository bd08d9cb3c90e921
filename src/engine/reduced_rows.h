#pragma once
// Rows of logits that come back reduced (backend::StepMetadata::row_forms): a sequence whose
// next draw needs only part of its row (sampling::Sampler::row_need) asks the step for that
// part. Greedy: the argmax. A draw confined by top-k, top-p or min-p: the row's 64 most likely
// tokens (and, for top-p alone, the row's total weight). A device backend then reduces the row
// where it is and sends back a few hundred bytes instead of the vocabulary's logits (at 64
// streams and a 128k vocabulary, 33 MB a step). A backend that leaves the row whole (the CPU):
// a greedy row is reduced here, the same way, so every backend's greedy tokens come from one
// definition; a Leading row is sampled whole, which Sampler::sample_leading equals by its
// contract (the tests that poison reduced rows reduce it here first, as a device would).
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

// The host's reduction of a row to its leading candidates: sampling::select_top's
// kLeadingCandidates, all_finite, and (for a `scale` other than 0) the row's total weight as
// the sampler sums it (sampling::sum_exp).
void host_row_leading(std::span<const float> row, float scale, backend::RowLeading& out);

}  // namespace lumen::engine
