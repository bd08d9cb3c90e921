#pragma once
// Scalar helpers that compile both as CUDA device code (nvcc) and as plain C++ (the host
// compiler), so the kernels' block arithmetic (block_decode.h) can be unit-tested on a CPU
// against the CPU backend without a GPU (tests/unit/cuda_host).
//
// Each helper has one meaning on both sides; only its spelling differs:
//  - mul_rn / add_rn / sub_rn round once per operation. On the device they are the _rn
//    intrinsics, which nvcc never contracts into an FMA; on the host they are plain operators,
//    which round the same provided the translation unit is built with -ffp-contract=off (as
//    the host test and tensor/'s reference dequantizers are).
//  - half_to_float widens exactly on both sides (tensor/fp16.h on the host).
//  - dp4a is __dp4a: four signed byte products added to an int.
//  - loads go through memcpy on the host (blocks are only 2-byte aligned, and the host has no
//    alignment rules to exploit), through 16-bit loads on the device.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "tensor/fp16.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#define LUMEN_HD __host__ __device__ __forceinline__
#else
#define LUMEN_HD inline
#endif
// Unrolled in device code; host compilers (also nvcc's host pass) unroll as they like and GCC
// warns on "#pragma unroll".
#if defined(__CUDA_ARCH__)
#define LUMEN_UNROLL _Pragma("unroll")
#define LUMEN_NO_UNROLL _Pragma("unroll 1")
#else
#define LUMEN_UNROLL
#define LUMEN_NO_UNROLL
#endif

namespace lumen::backend::cuda::hd {

LUMEN_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

LUMEN_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

LUMEN_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}

// expf, logf and tanhf on the device; the f32 overloads of the standard library on the host.
LUMEN_HD float exp_f32(float v) {
#if defined(__CUDA_ARCH__)
  return expf(v);
#else
  return std::exp(v);
#endif
}

LUMEN_HD float log_f32(float v) {
#if defined(__CUDA_ARCH__)
  return logf(v);
#else
  return std::log(v);
#endif
}

LUMEN_HD float tanh_f32(float v) {
#if defined(__CUDA_ARCH__)
  return tanhf(v);
#else
  return std::tanh(v);
#endif
}

LUMEN_HD uint32_t float_bits(float x) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(x);
#else
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return bits;
#endif
}

LUMEN_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// The same, once per operation in double (the LayerNorms' and the encoder attention's sums:
// encoder_math.h, rwkv7_math.h).
LUMEN_HD double mul_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

LUMEN_HD double add_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(a, b);
#else
  return a + b;
#endif
}

LUMEN_HD double sub_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, b);
#else
  return a - b;
#endif
}

LUMEN_HD double div_rn(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, b);
#else
  return a / b;
#endif
}

LUMEN_HD double sqrt_rn(double a) {
#if defined(__CUDA_ARCH__)
  return __dsqrt_rn(a);
#else
  return std::sqrt(a);
#endif
}

// erf and exp in double: CUDA's and the C library's, each within an ulp or two of the truth, so
// their results round to the same f32 but in the rarest cases.
LUMEN_HD double erfc_f64(double v) {
#if defined(__CUDA_ARCH__)
  return erfc(v);
#else
  return std::erfc(v);
#endif
}

LUMEN_HD double exp_f64(double v) {
#if defined(__CUDA_ARCH__)
  return exp(v);
#else
  return std::exp(v);
#endif
}

LUMEN_HD double tanh_f64(double v) {
#if defined(__CUDA_ARCH__)
  return tanh(v);
#else
  return std::tanh(v);
#endif
}

// One value's squared deviation from a mean, in double (the LayerNorms' second sum).
LUMEN_HD double squared_deviation(float x, double mean) {
  const double d = sub_rn(static_cast<double>(x), mean);
  return mul_rn(d, d);
}

// The correctly rounded f32 square root on both sides.
LUMEN_HD float sqrt_f32(float v) {
#if defined(__CUDA_ARCH__)
  return __fsqrt_rn(v);
#else
  return std::sqrt(v);
#endif
}

LUMEN_HD float half_to_float(uint16_t bits) {
#if defined(__CUDA_ARCH__)
  return __half2float(__ushort_as_half(bits));
#else
  return tensor::fp16_to_float(bits);
#endif
}

LUMEN_HD float bf16_to_float(uint16_t bits) {
  const uint32_t wide = static_cast<uint32_t>(bits) << 16;
#if defined(__CUDA_ARCH__)
  return __uint_as_float(wide);
#else
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
#endif
}

LUMEN_HD float float_from_bits(uint32_t bits) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(bits);
#else
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
#endif
}

// 2^(e - 128) exactly, for an E8M0 byte e (MXFP4's scale, tensor::mxfp4_scale): a normal float
// for e >= 2, the subnormals 2^-127 and 2^-128 for e = 1 and 0.
LUMEN_HD float e8m0_half_scale(uint8_t e) {
  const uint32_t bits = e >= 2 ? static_cast<uint32_t>(e - 1) << 23 : 0x200000u << e;
  return float_from_bits(bits);
}

// acc + the sum of the four products of the signed bytes of a and b.
LUMEN_HD int dp4a(int a, int b, int acc) {
#if defined(__CUDA_ARCH__)
  return __dp4a(a, b, acc);
#else
  for (int k = 0; k < 4; ++k) {
    acc += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * k)) *
           static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * k));
  }
  return acc;
#endif
}

LUMEN_HD uint16_t load_u16(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint16_t*>(p);
#else
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
#endif
}

// Four bytes from an address that is only 2-byte aligned (blocks of 18, 22, 34, 110, 210 bytes).
LUMEN_HD uint32_t load_u32_align2(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  const auto* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<uint32_t>(h[0]) | (static_cast<uint32_t>(h[1]) << 16);
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}

// Four bytes from any address (MXFP4's 17-byte blocks keep no alignment at all).
LUMEN_HD uint32_t load_u32_align1(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}

// Four bytes from a 4-byte aligned address.
LUMEN_HD uint32_t load_u32(const uint8_t* p) {
#if defined(__CUDA_ARCH__)
  return *reinterpret_cast<const uint32_t*>(p);
#else
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
#endif
}

// Subtracts `bias` (< 128) from each byte of `codes`, whose bytes are all in [0, 128): the
// results are the signed bytes code - bias. Setting each byte's top bit first means no byte
// borrows from its neighbour; flipping it back yields code - bias in two's complement.
LUMEN_HD uint32_t sub_bytes(uint32_t codes, uint32_t bias) {
  const uint32_t bias4 = bias * 0x01010101u;
  return ((codes | 0x80808080u) - bias4) ^ 0x80808080u;
}

// Spreads the low 4 bits of `bits` to bit 4 of four bytes: bit k goes to bit 4 of byte k.
LUMEN_HD uint32_t spread_bits_to_bit4(uint32_t bits) {
  return ((bits & 1u) << 4) | ((bits & 2u) << 11) | ((bits & 4u) << 18) | ((bits & 8u) << 25);
}

}  // namespace lumen::backend::cuda::hd
