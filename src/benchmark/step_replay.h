#pragma once
// How a model's steps ran on its backend (Backend::step_replay_stats: CUDA graphs recorded,
// replayed, given up), for the benchmarks' JSON: a decode timing is only read right beside how
// many of its steps were replays.
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "lumen/model.h"

namespace lumen::benchmark {

// The model's device backend's counts (all zero on the CPU, or for a model without weights).
backend::StepReplayStats step_replay_stats(const Model& model);
// after - before, as {"eager", "recorded", "replayed", "refused"}.
nlohmann::ordered_json step_replay_json(const backend::StepReplayStats& before, const backend::StepReplayStats& after);

}  // namespace lumen::benchmark
