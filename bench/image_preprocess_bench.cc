// Not a Google Benchmark: one image file decoded and preprocessed N times in this process (the
// way a server meets an upload), timed per step; one JSON line out. bench/compare_image_preprocess.py
// runs it beside transformers' processors on the same files.
//
//   image_preprocess_bench FILE MODE SIZE FILTER REPEATS
//     MODE: crop (CLIP: shortest side + center crop), square (SigLIP, Gemma 3), or tiles
//           (Idefics3: SIZE is the longest edge, the tiles a quarter of it, as 1456 and 364)
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "image/decode.h"
#include "image/image_tiling.h"
#include "image/preprocess.h"
#include "lumen/error.h"

namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s FILE crop|square|tiles SIZE FILTER REPEATS\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<uint8_t> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::string mode = argv[2];
  int size = std::stoi(argv[3]);
  int repeats = std::max(1, std::stoi(argv[5]));
  try {
    auto filter = lumen::image::resize_filter_from_pil(std::stoi(argv[4]));
    double decode_s = 1e30, preprocess_s = 1e30;  // the best of the repeats, as timeit's min
    size_t values = 0;
    for (int i = 0; i < repeats; ++i) {
      auto start = std::chrono::steady_clock::now();
      lumen::image::RgbImage image = lumen::image::decode(bytes);
      decode_s = std::min(decode_s, seconds_since(start));
      start = std::chrono::steady_clock::now();
      if (mode == "tiles") {
        lumen::image::TilingParams params;
        params.longest_edge = size;
        params.tile_size = size / 4;
        params.filter = filter;
        auto tiles = lumen::image::split_into_tiles(image, params);
        values = tiles.tiles.size() * tiles.tiles[0].chw.size();
      } else {
        lumen::image::PreprocessParams params;
        params.size = size;
        params.filter = filter;
        params.mode = mode == "crop" ? lumen::image::ResizeMode::kShortestEdgeCenterCrop
                                     : lumen::image::ResizeMode::kSquare;
        values = lumen::image::preprocess(image, params).chw.size();
      }
      preprocess_s = std::min(preprocess_s, seconds_since(start));
    }
    fmt::print("{{\"decode_ms\": {:.3f}, \"preprocess_ms\": {:.3f}, \"values\": {}}}\n", decode_s * 1e3,
               preprocess_s * 1e3, values);
  } catch (const lumen::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
  return 0;
}
