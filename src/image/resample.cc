#include "image/resample.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <vector>

#include "util/error.h"

namespace lumen::image {

namespace {

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's: room for sums of 255 * weights
constexpr int kMaxOutputSide = 8192;

double bilinear(double x) {
  x = std::fabs(x);
  return x < 1.0 ? 1.0 - x : 0.0;
}

// Keys' cubic with a = -0.5, as Pillow has it.
double bicubic(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= std::numbers::pi;
  return std::sin(x) / x;
}

double lanczos3(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3) : 0.0; }

struct Filter {
  double (*weight)(double);
  double support;
};

Filter filter_for(ResizeFilter filter) {
  switch (filter) {
    case ResizeFilter::kBilinear: return {bilinear, 1.0};
    case ResizeFilter::kBicubic: return {bicubic, 2.0};
    case ResizeFilter::kLanczos: return {lanczos3, 3.0};
  }
  fail("unknown resize filter {}", static_cast<int>(filter));
}

// For each output position, the first input position it reads and the fixed-point weights of
// the inputs from there (`taps` of them, the unused ones zero).
struct Kernel {
  int taps = 0;
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // out_size * taps
};

Kernel make_kernel(int in_size, int out_size, Filter filter) {
  // The computation follows Pillow's step by step (the same double expressions in the same
  // order), since the fixed-point rounding of each weight decides the last bit of a pixel.
  double scale = static_cast<double>(in_size) / out_size;
  double filter_scale = std::max(scale, 1.0);
  double support = filter.support * filter_scale;
  double inverse_scale = 1.0 / filter_scale;  // a multiplication, not a division: Pillow's bits
  Kernel kernel;
  kernel.taps = static_cast<int>(std::ceil(support)) * 2 + 1;
  kernel.first.resize(out_size);
  kernel.count.resize(out_size);
  kernel.weights.assign(static_cast<size_t>(out_size) * kernel.taps, 0);
  std::vector<double> weights(kernel.taps);
  for (int out = 0; out < out_size; ++out) {
    double center = (out + 0.5) * scale;
    int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    int hi = std::min(static_cast<int>(center + support + 0.5), in_size);
    int count = std::min(hi - lo, kernel.taps);
    double total = 0.0;
    for (int x = 0; x < count; ++x) {
      weights[x] = filter.weight((x + lo - center + 0.5) * inverse_scale);
      total += weights[x];
    }
    for (int x = 0; x < count; ++x) {
      double w = total != 0.0 ? weights[x] / total : weights[x];
      double fixed = w * (1 << kPrecisionBits);
      kernel.weights[static_cast<size_t>(out) * kernel.taps + x] =
          static_cast<int32_t>(w < 0 ? -0.5 + fixed : 0.5 + fixed);
    }
    kernel.first[out] = lo;
    kernel.count[out] = std::max(count, 0);
  }
  return kernel;
}

uint8_t clamp_fixed(int64_t sum) {
  int64_t value = sum >> kPrecisionBits;
  return static_cast<uint8_t>(std::clamp<int64_t>(value, 0, 255));
}

// One pass along rows (horizontal) or columns (vertical) of an RGB image. The sums are Pillow's,
// in the same order per output value; only the loops are arranged for the compiler (three
// accumulators a pixel; a whole row of accumulators for the vertical pass, which vectorises).
RgbImage resample_horizontal(const RgbImage& in, int out_width, const Kernel& kernel) {
  RgbImage out{out_width, in.height, std::vector<uint8_t>(static_cast<size_t>(out_width) * in.height * 3)};
  for (int y = 0; y < in.height; ++y) {
    const uint8_t* row = &in.rgb[static_cast<size_t>(y) * in.width * 3];
    uint8_t* dst = &out.rgb[static_cast<size_t>(y) * out_width * 3];
    for (int x = 0; x < out_width; ++x) {
      const int32_t* w = &kernel.weights[static_cast<size_t>(x) * kernel.taps];
      const uint8_t* src = row + static_cast<size_t>(kernel.first[x]) * 3;
      int64_t r = int64_t{1} << (kPrecisionBits - 1), g = r, b = r;
      for (int k = 0; k < kernel.count[x]; ++k) {
        r += int64_t{src[k * 3]} * w[k];
        g += int64_t{src[k * 3 + 1]} * w[k];
        b += int64_t{src[k * 3 + 2]} * w[k];
      }
      dst[x * 3] = clamp_fixed(r), dst[x * 3 + 1] = clamp_fixed(g), dst[x * 3 + 2] = clamp_fixed(b);
    }
  }
  return out;
}

RgbImage resample_vertical(const RgbImage& in, int out_height, const Kernel& kernel) {
  size_t row_bytes = static_cast<size_t>(in.width) * 3;
  RgbImage out{in.width, out_height, std::vector<uint8_t>(row_bytes * out_height)};
  std::vector<int64_t> sums(row_bytes);
  for (int y = 0; y < out_height; ++y) {
    const int32_t* w = &kernel.weights[static_cast<size_t>(y) * kernel.taps];
    const uint8_t* src = &in.rgb[static_cast<size_t>(kernel.first[y]) * row_bytes];
    std::fill(sums.begin(), sums.end(), int64_t{1} << (kPrecisionBits - 1));
    for (int k = 0; k < kernel.count[y]; ++k) {
      const uint8_t* line = src + k * row_bytes;
      for (size_t i = 0; i < row_bytes; ++i) sums[i] += int64_t{line[i]} * w[k];
    }
    uint8_t* dst = &out.rgb[static_cast<size_t>(y) * row_bytes];
    for (size_t i = 0; i < row_bytes; ++i) dst[i] = clamp_fixed(sums[i]);
  }
  return out;
}

}  // namespace

ResizeFilter resize_filter_from_pil(int number) {
  switch (number) {
    case 1: return ResizeFilter::kLanczos;
    case 2: return ResizeFilter::kBilinear;
    case 3: return ResizeFilter::kBicubic;
    default: break;
  }
  fail("resize filter {} is not supported (Pillow's 1 = LANCZOS, 2 = BILINEAR and 3 = BICUBIC are)", number);
}

RgbImage resize(const RgbImage& image, int width, int height, ResizeFilter filter) {
  if (width < 1 || height < 1 || width > kMaxOutputSide || height > kMaxOutputSide) {
    fail("cannot resize an image to {} x {} (each side must be 1 to {})", width, height, kMaxOutputSide);
  }
  if (image.width < 1 || image.height < 1) fail("cannot resize an empty image");
  Filter f = filter_for(filter);
  // Pillow skips a pass whose size does not change (it would be the identity anyway, up to the
  // rounding of weights that are not exactly zero). Since Pillow 13 the vertical pass goes first
  // when the height loses more than twice as many pixels as the width (less work for the
  // horizontal pass); the order decides the intermediate rounding, so it is followed too.
  bool vertical_first = image.height - height > 0 && image.height - height > (image.width - width) * 2;
  RgbImage current = image;
  auto horizontal = [&] {
    if (width != image.width) current = resample_horizontal(current, width, make_kernel(image.width, width, f));
  };
  auto vertical = [&] {
    if (height != image.height) current = resample_vertical(current, height, make_kernel(image.height, height, f));
  };
  if (vertical_first) {
    vertical();
    horizontal();
  } else {
    horizontal();
    vertical();
  }
  return current;
}

}  // namespace lumen::image
