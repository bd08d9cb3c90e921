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
  std::string pending;  // text waiting for the next control token: a row's closing newline
  for (int r = 1; r <= rows; ++r) {
    for (int c = 1; c <= cols; ++c) {
      pieces.push_back({pending + fmt::format("{}<row_{}_col_{}>", kAround, r, c), tokens_per_tile});
      pending.clear();
    }
    pending = "\n";
  }
  // A split image's global tile follows a blank line; an unsplit one stands alone.
  if (rows > 0 && cols > 0) pending += "\n";
  pieces.push_back({pending + kAround + kGlobal, tokens_per_tile});
  pieces.push_back({kAround, 0});
  return pieces;
}

}  // namespace lumen::vision
