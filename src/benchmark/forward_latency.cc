#include "benchmark/forward_latency.h"

#include <algorithm>
#include <chrono>
#include <span>
#include <vector>

#include "engine/model_state.h"
#include "engine/single_sequence_forward.h"

namespace lumen::benchmark {

struct ForwardLatency::State {
  State(const Model& m, int64_t longest)
      : model(m),
        forward(*engine::model_state(m).model, *engine::model_state(m).backend, longest + 1, 512,
                engine::model_state(m).parallel.get()),
        bos(engine::model_state(m).model->tokenizer.vocab().special.bos.value_or(0)),
        vocab(static_cast<uint32_t>(m.info().vocab_size)) {}
  Model model;  // keeps the weights alive
  engine::SingleSequenceForward forward;
  int32_t bos;
  uint32_t vocab;
};

ForwardLatency::ForwardLatency(const Model& model, int64_t longest)
    : state_(std::make_unique<State>(model, longest)) {}

ForwardLatency::~ForwardLatency() = default;

double ForwardLatency::time_ns(int64_t n_prompt, int64_t n_gen, std::mt19937& rng) {
  engine::SingleSequenceForward& forward = state_->forward;
  forward.reset();
  std::vector<int32_t> tokens(static_cast<size_t>(std::max<int64_t>({n_prompt, n_gen, 1})));
  tokens[0] = state_->bos;
  for (size_t i = 1; i < tokens.size(); ++i) tokens[i] = static_cast<int32_t>(rng() % state_->vocab);
  const auto start = std::chrono::steady_clock::now();
  if (n_prompt > 0) {
    forward.feed(std::span(tokens).first(static_cast<size_t>(n_prompt)));
  } else {
    // As llama-bench: each step feeds a random token; no sampling is timed.
    int32_t token = state_->bos;
    for (int64_t i = 0; i < n_gen; ++i) {
      forward.feed(std::span(&token, 1));
      token = tokens[static_cast<size_t>(i) % tokens.size()];
    }
  }
  return std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace lumen::benchmark
