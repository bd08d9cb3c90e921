#pragma once
// Images built byte by byte for the tests (hostile headers, bombs, many-frame GIFs), so no binary
// fixture is committed for them; and the golden images' folder.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace lumen::image::testing {

std::filesystem::path golden_dir();  // tests/golden/image
std::vector<uint8_t> read_file(const std::filesystem::path& path);

// A PNG whose IHDR says width x height (any values, even ones no decoder should accept), with
// the given colour type and bit depth, and one IDAT holding `scanlines` (each row's filter byte
// included) deflated; with a tRNS chunk naming `gray16_transparent` when it is not negative.
std::vector<uint8_t> make_png(uint32_t width, uint32_t height, int color_type, int bit_depth,
                              const std::vector<uint8_t>& scanlines, int gray16_transparent = -1,
                              bool interlaced = false);

// An 8-bit RGB PNG of `rgb` (width * height * 3 bytes), Adam7-interlaced when `interlaced`.
std::vector<uint8_t> make_rgb_png(int width, int height, const std::vector<uint8_t>& rgb, bool interlaced);

// A GIF89a of `frames` frames of width x height over a two-colour palette (0: red, 1: green):
// the first frame all index 0, every later one all index 1.
std::vector<uint8_t> make_gif(int width, int height, int frames);

}  // namespace lumen::image::testing
