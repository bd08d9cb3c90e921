// vision_encode_tool MMPROJ THREADS REPEATS [PIXELS_F32 FEATURES_F32]: loads a projector file,
// encodes one pixel tensor REPEATS times (after one warm-up) and prints JSON: the load time,
// each encode's seconds, the token count and width, and a checksum of the features. The pixels
// are seeded random values, or PIXELS_F32's raw little-endian floats (CHW); the last features
// go to FEATURES_F32 when named. For bench/compare_vision_encode.py (timing against llama.cpp's
// mtmd) and scripts/compare_vision_mtmd.py (features against mtmd's).
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "util/error.h"
#include "vision/vision_model.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    fmt::print(stderr, "usage: vision_encode_tool MMPROJ THREADS REPEATS [PIXELS_F32 FEATURES_F32]\n");
    return 2;
  }
  try {
    const auto start = std::chrono::steady_clock::now();
    const auto model = lumen::vision::VisionModel::load(
        argv[1], {.threads = static_cast<unsigned>(std::strtoul(argv[2], nullptr, 10))});
    const double load_s = seconds_since(start);
    const int64_t size = model->hparams().image_size;
    std::vector<float> pixels(static_cast<size_t>(3 * size * size));
    std::mt19937 rng(7);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& p : pixels) p = normal(rng);
    if (argc == 6) {
      std::ifstream in(argv[4], std::ios::binary);
      in.read(reinterpret_cast<char*>(pixels.data()), static_cast<std::streamsize>(pixels.size() * sizeof(float)));
      if (in.gcount() != static_cast<std::streamsize>(pixels.size() * sizeof(float))) {
        fmt::print(stderr, "error: {} holds fewer than {} floats\n", argv[4], pixels.size());
        return 1;
      }
    }
    std::vector<float> features = model->encode(pixels, static_cast<int>(size), static_cast<int>(size));  // warm-up
    std::vector<double> encode_s;
    for (int r = 0; r < std::atoi(argv[3]); ++r) {
      const auto t = std::chrono::steady_clock::now();
      features = model->encode(pixels, static_cast<int>(size), static_cast<int>(size));
      encode_s.push_back(seconds_since(t));
    }
    if (argc == 6) {
      std::ofstream out(argv[5], std::ios::binary);
      out.write(reinterpret_cast<const char*>(features.data()),
                static_cast<std::streamsize>(features.size() * sizeof(float)));
    }
    double checksum = 0.0;
    for (float f : features) checksum += std::abs(f);
    fmt::print(
        "{{\"load_s\": {:.4f}, \"encode_s\": [{:.4f}], \"image_tokens\": {}, \"n_embd_out\": {}, "
        "\"abs_sum\": {:.6g}}}\n",
        load_s, fmt::join(encode_s, ", "), model->image_tokens(), model->hparams().n_embd_out, checksum);
  } catch (const lumen::Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
