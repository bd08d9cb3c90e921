#pragma once
// `lumen run --image F`: image files placed in a raw prompt. Each image stands where the prompt
// spells the model's image marker ("<image>", "<start_of_image>": the encoder's
// image_marker()), in order; a prompt without markers gets one per image at its start,
// as llama.cpp's mtmd CLI does. Each file is encoded through the engine (its feature cache).
#include <string>
#include <vector>

#include "lumen/engine.h"
#include "lumen/model.h"

namespace lumen::cli {

// An image file's bytes, read only as far as the image decoder's byte limit (20 MiB) allows:
// lumen::Error naming the file when it is missing, a directory, unreadable or larger.
std::string read_image_file(const std::string& path);

// Expands `prompt` and returns the images placed in it. Throws lumen::Error naming the file for
// a file that cannot be read or that the encoder refuses, for a model without an image encoder
// (--mmproj), and for a prompt with another number of markers than images.
std::vector<PromptImage> place_run_images(Engine& engine, const Model& model, const std::vector<std::string>& files,
                                          std::vector<int32_t>& prompt);

}  // namespace lumen::cli
