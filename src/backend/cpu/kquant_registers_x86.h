#pragma once
// K-quant super-blocks unpacked straight into the registers the x86 K-quant panel multiplies
// with (x86_tiles.h), for the two formats a Q4_K_M file is mostly made of: Q4_K and Q6_K.
//
// Why. The generic route (kquant_decode.h) writes every super-block out in its uniform form and
// the panel loads it back and broadcasts its sixteen scales one by one. For prefill that cost is
// spread over a task's tokens; for decode (one token) it was the whole kernel: Q4_K and Q6_K
// matrices streamed at 3-5 GB/s on one core, a quarter of the memory's rate. Here the codes come
// from a few vector ands and shifts, the scales from byte shuffles. The values are the same as
// the generic route's (codes, int16 scales and mins, d and dmin), so the panel's integer sums
// and its float arithmetic, and therefore its results, are unchanged bit for bit.
//
// Include only from x86_tiles.h (it relies on that file's includes and namespace).

// What the panel needs of one row's super-block: codes[k] holds elements 32k .. 32k + 31 as u8,
// scales[k] their int16 scales in the layout maddubs leaves them (lanes 0..7: elements 32k ..
// 32k + 15, lanes 8..15: the next 16), mins the sixteen int16 per-16-element mins (for the
// activation block's bsums), and the two float scales.
struct KquantRegisters {
  __m256i codes[8];
  __m256i scales[8];
  __m256i mins;
  float d;
  float dmin;
};

using KquantRegistersFn = void (*)(const uint8_t* row, int64_t index, KquantRegisters& r);

// Any K-quant through its generic decoder.
template <DecodeSuperFn decode>
inline void staged_registers(const uint8_t* row, int64_t index, KquantRegisters& r) {
  DecodedSuper ws;
  decode(row, index, ws);
  for (int k = 0; k < 8; ++k) {
    r.scales[k] = _mm256_set_m128i(_mm_set1_epi16(ws.sc[2 * k + 1]), _mm_set1_epi16(ws.sc[2 * k]));
    r.codes[k] = load_256(ws.codes + 32 * k);
  }
  r.mins = load_256(ws.mn);
  r.d = ws.d;
  r.dmin = ws.dmin;
}

// Q4_K: eight 32-element sub-blocks, each with a 6-bit scale and min (packed as in ggml: the
// first four pairs in the low 6 bits of bytes 0..7, the last four split between the low and high
// nibbles of bytes 8..11 and the top 2 bits of bytes 0..7). Group g of 64 elements holds sub-block
// 2g in the low nibbles of qs[32 g ..] and sub-block 2g + 1 in the high ones.
inline void q4_k_registers(const uint8_t* row, int64_t index, KquantRegisters& r) {
  const uint8_t* block = row + index * int64_t{sizeof(tensor::BlockQ4_K)};
  const uint8_t* qs = block + offsetof(tensor::BlockQ4_K, qs);
  const uint8_t* p = block + offsetof(tensor::BlockQ4_K, scales);
  const __m256i low = _mm256_set1_epi8(0x0f);
  for (int g = 0; g < 4; ++g) {
    const __m256i q = load_256(qs + 32 * g);
    r.codes[2 * g] = _mm256_and_si256(q, low);
    r.codes[2 * g + 1] = _mm256_and_si256(_mm256_srli_epi16(q, 4), low);
  }
  // The 6-bit pairs, four at a time in 32-bit words: a = bytes 0..3, b = 4..7, c = 8..11.
  uint32_t a, b, c;
  std::memcpy(&a, p, 4);
  std::memcpy(&b, p + 4, 4);
  std::memcpy(&c, p + 8, 4);
  const uint32_t words[4] = {
      a & 0x3f3f3f3f,                                           // scales 0..3
      (c & 0x0f0f0f0f) | (((a >> 6) & 0x03030303) << 4),        // scales 4..7
      b & 0x3f3f3f3f,                                           // mins 0..3
      ((c >> 4) & 0x0f0f0f0f) | (((b >> 6) & 0x03030303) << 4)  // mins 4..7
  };
  // As int16 (scales 0..7, mins 0..7), each 128-bit half of `scales` (`mins`) holding all eight
  // scales (mins); byte shuffles then broadcast scale k, and lay the mins out in pairs.
  const __m256i pairs16 = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(words)));
  const __m256i scales = _mm256_permute2x128_si256(pairs16, pairs16, 0x00);
  const __m256i mins = _mm256_permute2x128_si256(pairs16, pairs16, 0x11);
  for (int k = 0; k < 8; ++k) {
    r.scales[k] = _mm256_shuffle_epi8(scales, _mm256_set1_epi16(static_cast<int16_t>(0x0100 + 0x0202 * k)));
  }
  // Each sub-block's min serves its two 16-element bsums: [m0, m0, m1, m1, ...].
  r.mins = _mm256_shuffle_epi8(mins, _mm256_setr_epi8(0, 1, 0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7, 6, 7, 8, 9, 8, 9, 10,
                                                      11, 10, 11, 12, 13, 12, 13, 14, 15, 14, 15));
  r.d = load_f16(block + offsetof(tensor::BlockQ4_K, d));
  r.dmin = load_f16(block + offsetof(tensor::BlockQ4_K, dmin));
}

// Q6_K: sixteen 16-element sub-blocks with int8 scales; q - 32 is taken as codes q with mins
// 32 * scale (kquant_decode.h). Per 128-element half, ql holds the low nibbles of its four
// 32-element quarters (quarters 0 and 1 in the low nibbles of ql[0..63], 2 and 3 in the high
// ones) and qh their 2-bit tops (quarter i in bits 2i of qh[0..31]).
inline void q6_k_registers(const uint8_t* row, int64_t index, KquantRegisters& r) {
  const uint8_t* block = row + index * int64_t{sizeof(tensor::BlockQ6_K)};
  const uint8_t* ql = block + offsetof(tensor::BlockQ6_K, ql);
  const uint8_t* qh = block + offsetof(tensor::BlockQ6_K, qh);
  const __m256i low = _mm256_set1_epi8(0x0f);
  const __m256i top = _mm256_set1_epi8(0x30);
  for (int half = 0; half < 2; ++half) {
    const __m256i a = load_256(ql + 64 * half);
    const __m256i b = load_256(ql + 64 * half + 32);
    const __m256i h = load_256(qh + 32 * half);
    __m256i* codes = r.codes + 4 * half;
    codes[0] = _mm256_or_si256(_mm256_and_si256(a, low), _mm256_and_si256(_mm256_slli_epi16(h, 4), top));
    codes[1] = _mm256_or_si256(_mm256_and_si256(b, low), _mm256_and_si256(_mm256_slli_epi16(h, 2), top));
    codes[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(a, 4), low), _mm256_and_si256(h, top));
    codes[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(b, 4), low),
                               _mm256_and_si256(_mm256_srli_epi16(h, 2), top));
  }
  // The sixteen scales as int16, each 128-bit half of `first` (`second`) holding scales 0..7
  // (8..15); a byte shuffle then spreads scale 2k over the low half and 2k + 1 over the high.
  const __m256i scales16 = _mm256_cvtepi8_epi16(
      _mm_loadu_si128(reinterpret_cast<const __m128i*>(block + offsetof(tensor::BlockQ6_K, scales))));
  const __m256i first = _mm256_permute2x128_si256(scales16, scales16, 0x00);
  const __m256i second = _mm256_permute2x128_si256(scales16, scales16, 0x11);
  for (int k = 0; k < 4; ++k) {
    const char lo = static_cast<char>(4 * k), hi = static_cast<char>(4 * k + 2);
    const __m256i spread = _mm256_setr_epi8(lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1, lo, lo + 1,
                                            lo, lo + 1, lo, lo + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1,
                                            hi, hi + 1, hi, hi + 1, hi, hi + 1, hi, hi + 1);
    r.scales[k] = _mm256_shuffle_epi8(first, spread);
    r.scales[k + 4] = _mm256_shuffle_epi8(second, spread);
  }
  r.mins = _mm256_slli_epi16(scales16, 5);
  r.d = load_f16(block + offsetof(tensor::BlockQ6_K, d));
  r.dmin = r.d;
}
