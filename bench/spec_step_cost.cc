// What a speculative verification step costs: one forward pass that scores 1 + k tokens (the
// real last token and k draft tokens, logits at every row) against a plain 1-token decode step,
// for k = 1..8 (or the listed k's: lookahead's steps carry 1 + draft + W (N - 1) - 1 rows), at a
// given context depth. Rounds interleave the k's in a shuffled order, so a
// shared machine's changing load falls on all of them alike; medians are printed.
//
//   build/<dir>/bench/spec_step_cost MODEL.gguf [depth=600] [rounds=30] [threads=2] [k,k,...]
//
// Speculation pays when the tokens a step yields (1 + accepted) grow faster than this cost;
// spec/draft_length.h chooses each draft's length from it (measured live by the engine).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "engine/model_state.h"
#include "engine/single_sequence_forward.h"
#include "lumen/model.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [depth] [rounds] [threads]\n", argv[0]);
    return 2;
  }
  const int64_t depth = argc > 2 ? std::atoll(argv[2]) : 600;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 30;
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 2u;
  const lumen::Model model = lumen::Model::load(argv[1], {.threads = threads});
  lumen::engine::SingleSequenceForward forward(*lumen::engine::model_state(model).model,
                                               *lumen::engine::model_state(model).backend, depth + 64);
  std::mt19937 rng(1);
  const auto vocab = static_cast<uint32_t>(model.info().vocab_size);
  std::vector<int32_t> prompt(static_cast<size_t>(depth));
  for (int32_t& t : prompt) t = static_cast<int32_t>(1 + rng() % (vocab - 1));
  forward.feed(prompt);

  std::vector<int> ks = {0, 1, 2, 3, 4, 5, 6, 7, 8};
  if (argc > 5) {
    ks = {0};
    std::stringstream list(argv[5]);
    for (std::string item; std::getline(list, item, ',');) ks.push_back(std::max(1, std::atoi(item.c_str())));
  }
  const int max_k = *std::max_element(ks.begin(), ks.end());
  std::vector<std::vector<double>> ms(static_cast<size_t>(max_k) + 1);
  std::vector<float> logits;
  std::vector<int> order = ks;
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (int k : order) {
      std::vector<int32_t> tokens(static_cast<size_t>(1 + k));
      for (int32_t& t : tokens) t = static_cast<int32_t>(1 + rng() % (vocab - 1));
      forward.truncate(depth);  // the same context each time: the step's K/V is overwritten
      const auto start = std::chrono::steady_clock::now();
      if (k == 0) {
        forward.feed(tokens);
      } else {
        forward.feed_all_logits(tokens, logits);
      }
      ms[static_cast<size_t>(k)].push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
    }
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  const double plain = median(ms[0]);
  std::printf("depth %lld, %d rounds, %u threads: decode step %.2f ms\n", static_cast<long long>(depth), rounds,
              threads, plain);
  for (const int k : ks) {
    if (k == 0) continue;
    const double t = median(ms[static_cast<size_t>(k)]);
    std::printf("1 + %d rows: %.2f ms, %.2fx a decode step (%.3f per draft token)\n", k, t, t / plain,
                (t / plain - 1.0) / k);
  }
}
