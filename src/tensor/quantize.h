#pragma once
// Reference (scalar, exact) conversion between f32 and every supported storage format.
// Dequantize is bit-exact with ggml / gguf-py; quantize picks scales to keep the error within
// the format's resolution. These are the ground truth the SIMD kernels are tested against.
//
// Two quantizers: quantize_row is Lumen's own (for K-quants a least-squares fit of its own,
// kquant_fit.h); quantize_row_ggml writes the bytes ggml's reference quantizers write, which
// is what llama-quantize produces without an importance matrix, so `lumen quantize` files can
// be compared with llama.cpp's byte for byte. For the plain and legacy formats the two are the
// same function (Lumen's already follows ggml step for step). IQ4_NL and IQ4_XS are the
// exception: both entry points run Lumen's own least-squares search (quant_iq4.cc), since the
// format, not llama-quantize's search, is what a reader needs.
#include <cstdint>

#include "tensor/dtype.h"

namespace lumen::tensor {

// `n` must be a multiple of the type's block size; throws lumen::Error otherwise or for a type
// without reference kernels.
void dequantize_row(DType type, const void* src, float* dst, int64_t n);
void quantize_row(DType type, const float* src, void* dst, int64_t n);
// As quantize_row, bit-exact with ggml; also throws for a type it has no ggml-exact path for
// (Q8_K, which llama-quantize never writes, and the types without kernels).
void quantize_row_ggml(DType type, const float* src, void* dst, int64_t n);
bool has_ggml_quantizer(DType type);
// `rows` rows of `n_per_row` elements as llama-quantize --imatrix writes them: importance
// (n_per_row values, the imatrix's mean squared activation per column) weights each element's
// error in ggml's searches (Q2_K..Q6_K, Q4_0, Q4_1, Q5_0, Q5_1; Lumen's own for IQ4_NL, IQ4_XS). Null importance, or a
// type ggml quantizes without weights (Q8_0, F16, ...), gives quantize_row_ggml's bytes.
void quantize_rows_ggml(DType type, const float* src, void* dst, int64_t rows, int64_t n_per_row,
                        const float* importance);

// The reference dequantizer of `type` over whole blocks (a count of blocks, not elements), for
// callers that convert many short rows of one type (attention over a quantized KV cache reads a
// head's slice of every row): the type is checked once here instead of once per row. Throws for
// a type without kernels.
using BlockDequantizer = void (*)(const void* src, float* dst, int64_t blocks);
BlockDequantizer block_dequantizer(DType type);

}  // namespace lumen::tensor
