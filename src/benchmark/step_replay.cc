#include "benchmark/step_replay.h"

#include "engine/model_state.h"

namespace lumen::benchmark {

backend::StepReplayStats step_replay_stats(const Model& model) {
  const engine::ModelState& state = engine::model_state(model);
  // A split model's device part is the second backend.
  const backend::Backend* device = state.owned_second_backend ? state.owned_second_backend.get() : state.backend;
  return device != nullptr ? device->step_replay_stats() : backend::StepReplayStats{};
}

nlohmann::ordered_json step_replay_json(const backend::StepReplayStats& before, const backend::StepReplayStats& after) {
  return {{"eager", after.eager - before.eager},
          {"recorded", after.recorded - before.recorded},
          {"replayed", after.replayed - before.replayed},
          {"refused", after.refused - before.refused}};
}

}  // namespace lumen::benchmark
