#pragma once
// What `lumen bench latency` times, as llama-bench does for llama.cpp: one sequence's forward
// pass alone (engine::SingleSequenceForward), either n_prompt random tokens in one go (pp) or
// n_gen single-token steps from an empty context (tg). No sampling, scheduling or HTTP: the
// model's own speed, comparable with llama-bench's numbers.
#include <cstdint>
#include <memory>
#include <random>

#include "lumen/model.h"

namespace lumen::benchmark {

class ForwardLatency {
 public:
  // A KV cache for `longest` tokens (the longest test).
  ForwardLatency(const Model& model, int64_t longest);
  ~ForwardLatency();

  // Nanoseconds for one run of n_prompt tokens (n_gen = 0) or n_gen steps (n_prompt = 0),
  // its random tokens drawn from rng.
  double time_ns(int64_t n_prompt, int64_t n_gen, std::mt19937& rng);

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace lumen::benchmark
