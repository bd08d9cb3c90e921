#include "engine_core.h"

#include <future>
#include <utility>

namespace lumen::python {

EngineCore::EngineCore(const std::string& model_path, const EngineOptions& options)
    : model_(Model::load(model_path, options.model)), engine_(model_, options.engine), seed_(options.seed) {}

std::vector<RequestHandle> EngineCore::submit(std::vector<int32_t> prompt, const SamplingParams& params) {
  if (params.seed || !seed_) return engine_.add_request_n(std::move(prompt), params);
  SamplingParams seeded = params;
  seeded.seed = *seed_ + seeded_requests_.fetch_add(1);
  return engine_.add_request_n(std::move(prompt), seeded);
}

void EngineCore::abort_all(const std::vector<std::vector<RequestHandle>>& requests) {
  for (const auto& handles : requests) engine_.abort(handles.front().id());
  while (engine_.has_unfinished()) engine_.step();
}

std::optional<std::vector<std::vector<GenerationResult>>> EngineCore::generate(
    const std::vector<std::vector<int32_t>>& prompts, const std::vector<SamplingParams>& params,
    const std::function<bool()>& interrupted) {
  std::lock_guard lock(drive_);
  std::vector<std::vector<RequestHandle>> requests;
  requests.reserve(prompts.size());
  try {
    for (size_t i = 0; i < prompts.size(); ++i) requests.push_back(submit(prompts[i], params[i]));
  } catch (...) {
    abort_all(requests);  // all or nothing: the prompts before the bad one do not run on
    throw;
  }
  constexpr auto kInterruptPoll = std::chrono::milliseconds(50);
  auto last_poll = std::chrono::steady_clock::now();
  while (engine_.has_unfinished()) {
    engine_.step();
    if (std::chrono::steady_clock::now() - last_poll >= kInterruptPoll) {
      last_poll = std::chrono::steady_clock::now();
      if (interrupted()) {
        abort_all(requests);
        return std::nullopt;
      }
    }
  }
  std::vector<std::vector<GenerationResult>> results(requests.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    for (RequestHandle& handle : requests[i]) results[i].push_back(handle.collect());
  }
  return results;
}

std::vector<std::vector<float>> EngineCore::embed(std::vector<std::vector<int32_t>> inputs) {
  std::lock_guard lock(drive_);
  std::future<std::vector<std::vector<float>>> vectors = engine_.embed(std::move(inputs));
  // The work runs over the next steps, one pass each; requests other callers queued step along with it.
  while (vectors.wait_for(std::chrono::seconds(0)) != std::future_status::ready) engine_.step();
  return vectors.get();
}

bool EngineCore::step() {
  std::lock_guard lock(drive_);
  return engine_.step();
}

}  // namespace lumen::python
