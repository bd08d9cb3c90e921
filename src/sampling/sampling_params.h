#pragma once
// SamplingParams is part of the public API (include/lumen/sampling_params.h, where every field's
// meaning is stated); the sampling code names it, and its limits, in its own namespace.
#include "lumen/sampling_params.h"

namespace lumen::sampling {

using lumen::SamplingParams;
using lumen::kMaxLogprobs;
using lumen::kMaxStopStringBytes;
using lumen::kMaxStopStrings;

}  // namespace lumen::sampling
