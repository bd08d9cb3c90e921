#pragma once
// How an Idefics3 / SmolVLM image stands in a prompt once its processor has cut it into a grid
// of tiles plus the global (whole-image) tile: the text Idefics3Processor writes around each
// tile's run of image tokens, as EncodedImage pieces. For a rows x cols grid, in reading order:
//   <fake_token_around_image><row_R_col_C> + the tile's tokens      (each tile)
//   "\n"                                                             (after each row)
//   "\n<fake_token_around_image><global-img>" + the global tile's tokens + <fake_token_around_image>
// An image that was not split (0 x 0) is the global tile alone:
//   <fake_token_around_image><global-img> + its tokens + <fake_token_around_image>
// The newlines are joined to the next marker's piece: the text between two control tokens is
// one piece, so it is tokenized as the reference tokenizes the whole string (a row's "\n" and the
// global tile's "\n" are one "\n\n" there).
#include <cstdint>
#include <string>
#include <vector>

#include "lumen/image_encoder.h"

namespace lumen::vision {

// tokens_per_tile positions for each of the rows * cols tiles, then for the global tile.
std::vector<EncodedImage::Piece> idefics3_prompt_layout(int rows, int cols, int64_t tokens_per_tile);

// The control tokens those layouts write for grids of up to max_side x max_side tiles.
std::vector<std::string> idefics3_control_tokens(int max_side);

}  // namespace lumen::vision
