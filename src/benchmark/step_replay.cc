#include "benchmark/step_replay.h"

#include "engine/model_state.h"

namespace lumen::benchmark {

namespace {

// A split model's device part is the second backend.
backend::Backend* device_backend(const Model& model) {
  const engine::ModelState& state = engine::model_state(model);
  return state.owned_second_backend ? state.owned_second_backend.get() : state.backend;
}

}  // namespace

backend::StepReplayStats step_replay_stats(const Model& model) {
  const backend::Backend* device = device_backend(model);
  return device != nullptr ? device->step_replay_stats() : backend::StepReplayStats{};
}

void time_device_steps(const Model& model, bool on) {
  if (backend::Backend* device = device_backend(model); device != nullptr) device->time_steps(on);
}

backend::StepDeviceTime step_device_time(const Model& model) {
  const backend::Backend* device = device_backend(model);
  return device != nullptr ? device->step_device_time() : backend::StepDeviceTime{};
}

nlohmann::ordered_json step_replay_json(const backend::StepReplayStats& before, const backend::StepReplayStats& after) {
  return {{"eager", after.eager - before.eager},
          {"recorded", after.recorded - before.recorded},
          {"replayed", after.replayed - before.replayed},
          {"refused", after.refused - before.refused},
          {"eager_not_decode", after.eager_not_decode - before.eager_not_decode},
          {"eager_warming", after.eager_warming - before.eager_warming},
          {"eager_refused", after.eager_refused - before.eager_refused},
          {"eager_over_limit", after.eager_over_limit - before.eager_over_limit}};
}

}  // namespace lumen::benchmark
