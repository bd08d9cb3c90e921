#pragma once
// Internal to the tensor module: how the K-quant quantizers choose their numbers. Every K-quant
// super-block is one of two shapes, so the search lives here once and the format files only
// pack bits:
//  - affine (Q2_K, Q4_K, Q5_K): x = (d * sc) * q - (dmin * m), q in [0, q_max], unsigned
//    sub-block codes sc and m in [0, code_max], d and dmin f16;
//  - symmetric (Q3_K, Q6_K): x = (d * sc) * q, q in [q_min, q_max], signed sub-block code sc
//    in [code_min, code_max], d f16.
//
// The method, in three steps (not ggml's search, but the same goal):
//  1. fit each sub-block in float: start from its range, then alternate "round every element to
//     the nearest level" and "least-squares refit of scale (and offset) for those levels",
//     keeping the best squared error seen (each step can only lower it);
//  2. pick the f16 super-scale(s) so the largest sub-block scale (offset) gets the largest code;
//  3. for each sub-block try the two integer codes either side of its ideal ratio (both for the
//     scale and the offset) and keep the pair whose re-quantized elements, rebuilt with the very
//     float operations the dequantizer uses, have the least squared error.
// Step 3 is what keeps coarse 4- and 6-bit sub-block codes from clipping or wasting range.
#include <cstdint>

#include "tensor/block_formats.h"

namespace lumen::tensor::kernels {

inline constexpr int kMaxSubBlocks = 16;

struct AffineShape {
  int sub_blocks;
  int sub_block_size;
  int q_max;
  int code_max;  // for both the scale codes and the offset ("min") codes
};

struct AffineSuperBlock {
  uint16_t d = 0;     // f16 bits
  uint16_t dmin = 0;  // f16 bits
  uint8_t scale_codes[kMaxSubBlocks] = {};
  uint8_t min_codes[kMaxSubBlocks] = {};
  uint8_t q[kSuperBlock] = {};
};

struct SymmetricShape {
  int sub_blocks;
  int sub_block_size;
  int q_min;
  int q_max;
  int code_min;
  int code_max;
};

struct SymmetricSuperBlock {
  uint16_t d = 0;  // f16 bits
  int8_t scale_codes[kMaxSubBlocks] = {};
  int8_t q[kSuperBlock] = {};
};

// `x` holds shape.sub_blocks * shape.sub_block_size (== kSuperBlock) values.
void quantize_affine_super_block(const float* x, const AffineShape& shape,
                                 AffineSuperBlock& out);
void quantize_symmetric_super_block(const float* x, const SymmetricShape& shape,
                                    SymmetricSuperBlock& out);

}  // namespace lumen::tensor::kernels
