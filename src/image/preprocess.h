#pragma once
// An RgbImage to the float tensor a vision encoder takes, as Hugging Face's image processors make
// it (their PIL path, the reference): resize (CLIP/LLaVA: the shortest side to the target, then a
// center crop; SigLIP/Gemma 3: straight to N x N), rescale by 1/255, subtract the mean and divide
// by the standard deviation per channel. The parameters are explicit: the encoder reads them
// from the projector's GGUF (clip.vision.image_size, image_mean, image_std).
#include <array>
#include <vector>

#include "image/resample.h"
#include "image/rgb_image.h"

namespace lumen::image {

enum class ResizeMode {
  kSquare,                  // resize to size x size, aspect ratio not kept (SigLIP, Gemma 3)
  kShortestEdgeCenterCrop,  // shortest side to size, then the central size x size (CLIP, LLaVA)
};

struct PreprocessParams {
  int size = 224;  // the encoder's square input side, 1 to 8192
  ResizeMode mode = ResizeMode::kShortestEdgeCenterCrop;
  ResizeFilter filter = ResizeFilter::kBicubic;
  double rescale_factor = 1.0 / 255.0;
  std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};  // OpenAI CLIP's
  std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};
};

struct PixelTensor {
  int width = 0, height = 0;
  std::vector<float> chw;  // 3 planes (R, G, B) of height rows of width values
};

// The central width x height of `image`; where the image is smaller, it is centred on zeros
// (black), as transformers' center_crop pads.
RgbImage center_crop(const RgbImage& image, int width, int height);

// No resizing: the rescaled, normalised planes of `image` (also used per tile).
PixelTensor to_pixel_tensor(const RgbImage& image, const PreprocessParams& params);

PixelTensor preprocess(const RgbImage& image, const PreprocessParams& params);

}  // namespace lumen::image
