#pragma once
// The innermost loops of the machine-ceiling probes (machine_ceilings.h), one set per
// instruction-set level, each in a translation unit compiled for that level. Each returns a
// value derived from all its work so the compiler cannot drop any of it.
#include <cstddef>
#include <cstdint>

namespace lumen::profile::probes {

// Sums `bytes` (a multiple of 256) of 64-bit words at p, 64-byte aligned.
uint64_t read_sum_avx512(const void* p, size_t bytes);
uint64_t read_sum_avx2(const void* p, size_t bytes);
uint64_t read_sum_scalar(const void* p, size_t bytes);

// `iterations` rounds of kChains independent f32 FMA chains of one vector each.
constexpr int kChains = 12;
float fma_avx512(int64_t iterations);
float fma_avx2(int64_t iterations);
// The same for u8 x s8 dot products accumulated in i32 (vpdpbusd on 512- or 256-bit vectors;
// AVX2: vpmaddubsw + vpmaddwd + vpaddd).
int32_t dot_i8_avx512(int64_t iterations);
int32_t dot_i8_avx512_ymm(int64_t iterations);
int32_t dot_i8_avx2(int64_t iterations);

}  // namespace lumen::profile::probes
