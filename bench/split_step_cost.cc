// What splitting a model over two backends costs by itself (model/backend_split.h,
// --n-gpu-layers): the same model on one CPU backend and split between two CPU backends at
// several layers, a decode step (one token at a given depth) and a prefill (a 128-token chunk),
// in rounds that interleave the configurations in a shuffled order so a shared machine's load
// falls on all alike. Both sides compute the same numbers (unit_split checks it bit for bit): the
// difference is the seam's copy and the second step boundary. Medians, one JSON object on stdout.
//
//   build/<dir>/bench/split_step_cost MODEL.gguf [depth=256] [rounds=20] [threads=2]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "backend/cpu/cpu_backend.h"
#include "engine/loaded_model.h"
#include "engine/single_sequence_forward.h"

namespace {

using namespace lumen;

struct Config {
  int64_t first_layer;  // -1: one backend
  std::unique_ptr<backend::CpuBackend> first, second;
  std::unique_ptr<engine::LoadedModel> model;
  std::unique_ptr<engine::SingleSequenceForward> forward;
  std::vector<double> decode_ms, prefill_ms;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.gguf [depth] [rounds] [threads]\n", argv[0]);
    return 2;
  }
  const std::string path = argv[1];
  const int64_t depth = argc > 2 ? std::atoll(argv[2]) : 256;
  const int rounds = argc > 3 ? std::atoi(argv[3]) : 20;
  const unsigned threads = argc > 4 ? static_cast<unsigned>(std::atoi(argv[4])) : 2u;
  constexpr int64_t kPrefill = 128;
  std::vector<Config> configs;
  for (const int64_t first_layer : {int64_t{-1}, int64_t{0}, int64_t{15}, int64_t{30}}) {
    Config c;
    c.first_layer = first_layer;
    c.first = std::make_unique<backend::CpuBackend>(threads);
    c.second = std::make_unique<backend::CpuBackend>(threads);
    engine::ModelPart part;
    if (first_layer >= 0) {
      backend::Backend* second = c.second.get();
      part.split = [second, first_layer](const gguf::GgufFile&, const model::HParams& hp) {
        return model::BackendSplit{second, std::min<uint64_t>(static_cast<uint64_t>(first_layer), hp.block_count)};
      };
    }
    c.model = std::make_unique<engine::LoadedModel>(engine::LoadedModel::load(path, *c.first, part));
    c.forward = std::make_unique<engine::SingleSequenceForward>(*c.model, *c.first, depth + kPrefill + 8);
    configs.push_back(std::move(c));
  }
  std::mt19937 rng(1);
  const auto vocab = static_cast<uint32_t>(configs[0].model->hparams.vocab_size);
  std::vector<int32_t> context(static_cast<size_t>(depth)), chunk(kPrefill);
  for (int32_t& t : context) t = static_cast<int32_t>(1 + rng() % (vocab - 1));
  for (int32_t& t : chunk) t = static_cast<int32_t>(1 + rng() % (vocab - 1));
  for (Config& c : configs) c.forward->feed(context);
  std::vector<size_t> order(configs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto time_ms = [](auto&& body) {
    const auto start = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  };
  for (int r = 0; r < rounds; ++r) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i : order) {
      Config& c = configs[i];
      const std::vector<int32_t> one = {static_cast<int32_t>(1 + rng() % (vocab - 1))};
      c.forward->truncate(depth);
      c.decode_ms.push_back(time_ms([&] { c.forward->feed(one); }));
      c.forward->truncate(depth);
      c.prefill_ms.push_back(time_ms([&] { c.forward->feed(chunk); }));
    }
  }
  nlohmann::ordered_json out = {{"model", path},    {"depth", depth},     {"prefill_tokens", kPrefill},
                                {"rounds", rounds}, {"threads", threads}, {"runs", nlohmann::json::array()}};
  for (const Config& c : configs) {
    out["runs"].push_back({{"first_layer", c.first_layer},  // -1: one backend (the peer)
                           {"decode_ms", median(c.decode_ms)},
                           {"prefill_ms", median(c.prefill_ms)}});
  }
  std::printf("%s\n", out.dump(2).c_str());
}
