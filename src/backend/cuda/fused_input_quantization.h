#pragma once
// Internal to the CUDA backend: which outputs of an RMSNorm or a SwiGLU are quantized in the same
// launch for the matmul that reads them next (CudaBackendOptions::fused_input_quantization).
//
// A decode step of a 1B model launched 65 activation quantizations (2.8 us each on an H200), 49
// of them on the output of the op just before: the attention norm's (Q/K/V), the FFN norm's
// (gate/up), SwiGLU's (down) and the final norm's (the output layer). Those producers write each
// row's values anyway; quantizing them there costs a few instructions and no launch.
//
// The producer cannot see its consumer, so this learns it: a producer site (the norm's weight,
// or SwiGLU's output buffer) remembers the activation type (Q8_0, Q8_1 or Q8_K) of the matmul
// that read its output right after it, and from then on emits that type. The matmul skips its
// quantization only when all of these hold:
//   - the producer ran in the op call just before the matmul's (Backend::op_calls): no op
//     between them could have changed the input or the scratch;
//   - the matmul reads exactly the producer's output (address, shape, stride) with the same
//     activation type;
//   - no quantization since the producer has overwritten the scratch (in one matmul_same_input,
//     an output of another type quantizes over it).
// A wrong guess (a site whose consumers change type) costs the quantization it would have cost
// anyway, never a wrong result: the fused kernels write exactly the bits the quantization kernel
// writes from the producer's f32 output.
//
// Host-only, so tests/unit/cuda_host checks the bookkeeping without a GPU.
#include <cstdint>
#include <optional>
#include <unordered_map>

#include "tensor/dtype.h"

namespace lumen::backend::cuda {

class FusedInputQuantization {
 public:
  // The activation type to quantize `site`'s output into in the same launch, if its consumer is
  // known and the shape allows it (whole 32-value blocks; 256 for Q8_K).
  std::optional<tensor::DType> emit_for(const void* site, int64_t cols) const;

  // A producer ran (op call `op`): its output `out` of rows x cols, rows `stride` floats apart,
  // quantized as `emitted` (nullopt: not quantized) into the shared scratch, or into `codes` where
  // the producer had to write elsewhere (the gate/up GEMV's SwiGLU epilogue: the scratch holds its
  // own input while it runs).
  void produced(const void* site, const void* out, int64_t rows, int64_t cols, int64_t stride,
                std::optional<tensor::DType> emitted, uint64_t op, void* codes = nullptr);

  // Where the quantization that consume() last found ready lies: the buffer the producer named,
  // or nullptr for the shared scratch.
  void* producer_codes() const { return last_.codes; }

  // A matmul in op call `op` reads x (rows x cols, `stride` apart) as `act`. Learns the
  // consumer's type of the producer just before it; true when the scratch already holds exactly
  // this quantization.
  bool consume(const void* x, tensor::DType act, int64_t rows, int64_t cols, int64_t stride, uint64_t op);

  // How many matmuls found their input quantized already (consume returned true).
  uint64_t prequantized() const { return prequantized_; }

  // A quantization kernel wrote the scratch (it no longer holds a producer's output).
  void scratch_overwritten() { scratch_holds_producer_ = false; }

  // Forget what was produced (an allocation moved the scratch, a step was aborted).
  void reset_producer() {
    last_ = {};
    scratch_holds_producer_ = false;
  }

 private:
  struct Produced {
    const void* site = nullptr;
    const void* out = nullptr;
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t stride = 0;
    std::optional<tensor::DType> emitted;
    uint64_t op = 0;
    void* codes = nullptr;
    bool valid = false;
    bool consumed = false;
  };
  std::unordered_map<const void*, tensor::DType> consumer_type_;
  Produced last_;
  bool scratch_holds_producer_ = false;
  uint64_t prequantized_ = 0;
};

}  // namespace lumen::backend::cuda
