#include "engine_core.h"

#include <future>
#include <span>
#include <utility>

#include "lumen/image_markers.h"
#include "util/error.h"

namespace lumen::python {

EngineCore::EngineCore(const std::string& model_path, const EngineOptions& options)
    : model_(Model::load(model_path, options.model)), engine_(model_, options.engine), seed_(options.seed) {}

std::vector<RequestHandle> EngineCore::submit(std::vector<int32_t> prompt, const SamplingParams& params,
                                              std::vector<PromptImage> images) {
  SamplingParams seeded = params;
  if (!params.seed && seed_) seeded.seed = *seed_ + seeded_requests_.fetch_add(1);
  return engine_.add_request_n(std::move(prompt), seeded, 0, 0, 0, std::move(images));
}

std::vector<PromptImage> EngineCore::place_images(std::vector<int32_t>& prompt, const std::vector<std::string>& files) {
  const std::shared_ptr<const ImageEncoder> encoder = model_.image_encoder();
  if (!encoder) fail("this model has no vision encoder: load it with LLM(model, mmproj=PROJECTOR_GGUF)");
  std::vector<Engine::ImageFeatures> encoded;
  encoded.reserve(files.size());
  for (const std::string& file : files) {
    try {
      encoded.push_back(engine_.encode_image(std::span(reinterpret_cast<const uint8_t*>(file.data()), file.size())));
    } catch (const Error& e) {
      fail("image {}: {}", encoded.size(), e.what());
    }
  }
  return place_images_at_markers(model_, encoder->image_marker(), prompt, encoded);
}

void EngineCore::abort_all(const std::vector<std::vector<RequestHandle>>& requests) {
  for (const auto& handles : requests) engine_.abort(handles.front().id());
  while (engine_.has_unfinished()) engine_.step();
}

std::optional<std::vector<std::vector<GenerationResult>>> EngineCore::generate(
    const std::vector<std::vector<int32_t>>& prompts, const std::vector<SamplingParams>& params,
    const std::function<bool()>& interrupted, const std::vector<std::vector<PromptImage>>& images) {
  std::lock_guard lock(drive_);
  std::vector<std::vector<RequestHandle>> requests;
  requests.reserve(prompts.size());
  try {
    for (size_t i = 0; i < prompts.size(); ++i) {
      requests.push_back(submit(prompts[i], params[i], images.empty() ? std::vector<PromptImage>{} : images[i]));
    }
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
