// What an image costs the engine beyond its tokens: the time to first token of a prompt whose
// middle `image` positions take given feature vectors (Engine::add_request_n with a
// PromptImage), against the same prompt as plain tokens (the peer, in the same run). The
// features are the model's own token-embedding rows for those tokens, so both prompts compute
// the same thing and only the embedding path differs (rows copied in, image block keys).
// Rounds alternate the two in a shuffled order; prefix caching is off, so every round
// computes the whole prompt. Prints one JSON object.
//
//   build/<dir>/bench/image_prompt_cost MODEL.gguf [prompt=512] [image=256] [rounds=15] [threads=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "backend/tensor_view.h"
#include "engine/model_state.h"
#include "lumen/engine.h"
#include "lumen/model.h"

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [prompt] [image] [rounds] [threads]\n", argv[0]);
    return 2;
  }
  const int64_t n_prompt = argc > 2 ? std::atoll(argv[2]) : 512;
  const int64_t n_image = argc > 3 ? std::atoll(argv[3]) : 256;
  const int rounds = argc > 4 ? std::atoi(argv[4]) : 15;
  const unsigned threads = argc > 5 ? static_cast<unsigned>(std::atoi(argv[5])) : 2u;
  const lumen::Model model = lumen::Model::load(argv[1], {.threads = threads});
  lumen::engine::LoadedModel& loaded = *lumen::engine::model_state(model).model;
  lumen::backend::Backend& backend = *lumen::engine::model_state(model).backend;

  std::mt19937 rng(1);
  const auto vocab = static_cast<uint32_t>(model.info().vocab_size);
  std::vector<int32_t> text(static_cast<size_t>(n_prompt));
  for (int32_t& t : text) t = static_cast<int32_t>(1 + rng() % (vocab - 1));
  const int64_t first = (n_prompt - n_image) / 2;
  const auto width = static_cast<int64_t>(loaded.hparams.embedding_length);
  auto rows = std::make_shared<std::vector<float>>(static_cast<size_t>(n_image * width));
  lumen::backend::TensorView out = lumen::backend::f32_matrix(rows->data(), width, n_image);
  backend.get_rows(loaded.transformer->weights().token_embd,
                   std::span<const int32_t>(text).subspan(static_cast<size_t>(first), static_cast<size_t>(n_image)),
                   out);
  std::vector<int32_t> with_image = text;
  std::fill_n(with_image.begin() + first, n_image, 0);
  const lumen::PromptImage image{{1, 2}, first, n_image, rows};

  lumen::EngineConfig config;
  config.enable_prefix_caching = false;
  config.max_num_batched_tokens = n_prompt;
  config.kv_cache_bytes = int64_t{256} << 20;
  lumen::Engine engine(model, config);
  lumen::SamplingParams params;
  params.temperature = 0.0f;
  params.max_tokens = 1;
  std::vector<double> text_ms, image_ms;
  std::vector<int> order = {0, 1};
  for (int r = 0; r < rounds + 1; ++r) {  // round 0 warms up, unrecorded
    std::shuffle(order.begin(), order.end(), rng);
    for (int which : order) {
      const auto start = std::chrono::steady_clock::now();
      lumen::RequestHandle h = which == 0 ? engine.add_request(text, params)
                                          : engine.add_request_n(with_image, params, 0, 0, 0, {image}).front();
      while (engine.has_unfinished()) engine.step();
      h.collect();
      const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (r > 0) (which == 0 ? text_ms : image_ms).push_back(ms);
    }
  }
  std::printf(
      "{\"model\": \"%s\", \"threads\": %u, \"prompt_tokens\": %lld, \"image_tokens\": %lld, \"rounds\": %d, "
      "\"text_ttft_ms_median\": %.2f, \"image_ttft_ms_median\": %.2f, \"image_over_text\": %.4f}\n",
      model.info().path.c_str(), threads, static_cast<long long>(n_prompt), static_cast<long long>(n_image), rounds,
      median(text_ms), median(image_ms), median(image_ms) / median(text_ms));
  return 0;
}
