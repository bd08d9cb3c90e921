#pragma once
// How a model's steps ran on its backend (Backend::step_replay_stats: CUDA graphs recorded,
// replayed, given up; Backend::step_device_time: their time on the device), for the benchmarks'
// JSON: a decode timing is only read right beside how many of its steps were replays, and a step's
// wall time beside its device time (the difference is the host's, in series).
#include <nlohmann/json.hpp>

#include "backend/backend.h"
#include "lumen/model.h"

namespace lumen::benchmark {

// The model's device backend's counts (all zero on the CPU, or for a model without weights).
backend::StepReplayStats step_replay_stats(const Model& model);
// after - before, as {"eager", "recorded", "replayed", "refused"} and why the eager ones were
// ("eager_not_decode", "eager_warming", "eager_refused", "eager_over_limit").
nlohmann::ordered_json step_replay_json(const backend::StepReplayStats& before, const backend::StepReplayStats& after);
// Backend::time_steps and step_device_time on the model's device backend (none: nothing, zeros).
void time_device_steps(const Model& model, bool on);
backend::StepDeviceTime step_device_time(const Model& model);

}  // namespace lumen::benchmark
