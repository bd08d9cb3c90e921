// Idefics3 / SmolVLM's prompt text around tiles (tiled_prompt_layout.h).
#include "vision/tiled_prompt_layout.h"

#include <fmt/format.h>

namespace lumen::vision {

namespace {
constexpr const char* kAround = "<fake_token_around_image>";
constexpr const char* kGlobal = "<global-img>";
}  // namespace

std::vector<EncodedImage::Piece> idefics3_prompt_layout(int rows, int cols, int64_t tokens_per_tile) {
  std::vector<EncodedImage::Piece> pieces;
  for (int r = 1; r <= rows; ++r) {
    for (int c = 1; c <= cols; ++c) {
      // The previous row's closing newline stands before the row's first tile.
      const char* before = (c == 1 && r > 1) ? "\n" : "";
      pieces.push_back({fmt::format("{}{}<row_{}_col_{}>", before, kAround, r, c), tokens_per_tile});
    }
  }
  // A split image's global tile follows the last row's newline and a blank line; an unsplit one
  // stands alone.
  const char* before = (rows > 0 && cols > 0) ? "\n\n" : "";
  pieces.push_back({fmt::format("{}{}{}", before, kAround, kGlobal), tokens_per_tile});
  pieces.push_back({kAround, 0});
  return pieces;
}

std::vector<std::string> idefics3_control_tokens(int max_side) {
  std::vector<std::string> tokens = {kAround, kGlobal};
  for (int r = 1; r <= max_side; ++r) {
    for (int c = 1; c <= max_side; ++c) tokens.push_back(fmt::format("<row_{}_col_{}>", r, c));
  }
  return tokens;
}

}  // namespace lumen::vision
