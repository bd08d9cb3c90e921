#pragma once
// What lumen.LLM and lumen.AsyncEngine hold: a loaded model and the engine over it, with one
// lock so that only one thread at a time drives the engine (Engine::step is not re-entrant;
// submitting and aborting need no lock, the engine takes requests from any thread).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine_options.h"
#include "lumen/engine.h"
#include "lumen/model.h"

namespace lumen::python {

class EngineCore {
 public:
  EngineCore(const std::string& model_path, const EngineOptions& options);

  const Model& model() const { return model_; }
  Engine& engine() { return engine_; }

  // Queues one request (params.n completions) with the images placed in its prompt (see
  // place_images); a request without a seed gets the next engine seed when the engine has one.
  // Throws lumen::Error for a bad prompt or parameters.
  std::vector<RequestHandle> submit(std::vector<int32_t> prompt, const SamplingParams& params,
                                    std::vector<PromptImage> images = {});

  // Encodes each image file (Engine::encode_image: the bounded decode and the feature cache the
  // server uses) and expands the image markers the chat template wrote in `prompt` for them
  // (lumen/image_markers.h). Throws lumen::Error, naming the image, for a model without an
  // image encoder (mmproj), a file the decoder refuses, or another number of markers than images.
  std::vector<PromptImage> place_images(std::vector<int32_t>& prompt, const std::vector<std::string>& files);

  // Submits every prompt (prompts[i] with params[i]) and steps until all are done: continuous
  // batching over the whole list. Returns, per prompt, its n completions. `interrupted` is
  // asked between steps (about every 50 ms): when it says yes every request is aborted, the
  // engine is left idle and nullopt is returned. Throws lumen::Error (and leaves nothing
  // queued) when a prompt or its parameters are refused.
  // images: empty, or one list per prompt (place_images's).
  std::optional<std::vector<std::vector<GenerationResult>>> generate(
      const std::vector<std::vector<int32_t>>& prompts, const std::vector<SamplingParams>& params,
      const std::function<bool()>& interrupted, const std::vector<std::vector<PromptImage>>& images = {});

  // One engine step (for the AsyncEngine's loop thread); false when there was nothing to do.
  bool step();

  // Engine::embed, driven here until the vectors are ready: one per input, pooled as the model
  // says and L2-normalised. Throws lumen::Error for a refused input.
  std::vector<std::vector<float>> embed(std::vector<std::vector<int32_t>> inputs);

 private:
  // Aborts the requests and steps until the engine has finished them.
  void abort_all(const std::vector<std::vector<RequestHandle>>& requests);

  Model model_;
  Engine engine_;
  std::mutex drive_;
  std::optional<uint64_t> seed_;
  std::atomic<uint64_t> seeded_requests_{0};
};

}  // namespace lumen::python
