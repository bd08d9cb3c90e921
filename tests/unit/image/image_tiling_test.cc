// Idefics3 image splitting: the grid from the size alone, the tile bound, the unsplit case (the
// pixel values are checked against transformers in image_golden_test.cc).
#include <gtest/gtest.h>

#include "image/image_tiling.h"
#include "lumen/error.h"

namespace lumen::image {
namespace {

RgbImage gray(int width, int height) {
  return RgbImage{width, height, std::vector<uint8_t>(static_cast<size_t>(width) * height * 3, 128)};
}

TEST(ImageTiling, GridFollowsTheAspectRatio) {
  TilingParams params;                                                           // Idefics3's: 1456, tiles of 364
  EXPECT_EQ(tiled_size(2000, 1000, params), (std::pair<int, int>{1456, 728}));   // 4 x 2 tiles
  EXPECT_EQ(tiled_size(1000, 1000, params), (std::pair<int, int>{1456, 1456}));  // 4 x 4, the most
  // A 16384 x 16 strip becomes one row of four tiles, not thousands.
  EXPECT_EQ(tiled_size(16384, 16, params), (std::pair<int, int>{1456, 364}));
}

TEST(ImageTiling, TooManyTilesAreRefusedBeforeResizing) {
  TilingParams params;
  params.max_tiles = 9;
  EXPECT_THROW(tiled_size(1000, 1000, params), Error);  // 4 x 4 + 1
  params.longest_edge = 100000;
  EXPECT_THROW(tiled_size(10, 10, params), Error);
}

TEST(ImageTiling, OneTileImageIsNotSplit) {
  TilingParams params;
  params.longest_edge = 24;
  params.tile_size = 24;
  TiledPixels tiles = split_into_tiles(gray(50, 40), params);
  EXPECT_EQ(tiles.rows, 0);
  EXPECT_EQ(tiles.cols, 0);
  ASSERT_EQ(tiles.tiles.size(), 1u);
  EXPECT_EQ(tiles.tiles[0].width, 24);
  // 128/255 normalised with mean 0.5, std 0.5, in float as transformers computes it.
  EXPECT_FLOAT_EQ(tiles.tiles[0].chw[0], (static_cast<float>(128 / 255.0) - 0.5f) / 0.5f);
}

TEST(ImageTiling, SplitImageEndsWithTheGlobalTile) {
  TilingParams params;
  params.longest_edge = 48;
  params.tile_size = 16;
  TiledPixels tiles = split_into_tiles(gray(90, 30), params);  // 48 x 16: one row of three
  EXPECT_EQ(tiles.rows, 1);
  EXPECT_EQ(tiles.cols, 3);
  ASSERT_EQ(tiles.tiles.size(), 4u);
  for (const PixelTensor& tile : tiles.tiles) EXPECT_EQ(tile.chw.size(), 3u * 16 * 16);
}

}  // namespace
}  // namespace lumen::image
