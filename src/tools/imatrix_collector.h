#pragma once
// The statistics `lumen imatrix` gathers, as llama-imatrix does: for every decoder-layer weight
// matrix, the sum over every token of each input column's squared activation, and the number of
// tokens. It watches the forward pass through model::MatmulObserver; weights are named by
// matching their data with the model file's tensors (the CPU backend's weights are views of the
// mapped file). A 3-D expert tensor has one row of sums and one count per expert (the tokens
// routed to it), as llama-imatrix keeps them. As llama-imatrix, a dense matmul over fewer than
// 16 tokens is not counted (an expert's always is).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "backend/backend.h"
#include "gguf/file.h"
#include "model/matmul_observer.h"
#include "quantize/imatrix_file.h"

namespace lumen::tools {

class ImatrixCollector : public model::MatmulObserver {
 public:
  ImatrixCollector(const gguf::GgufFile& file, backend::Backend& backend);

  void on_matmul(const backend::TensorView& weight, const backend::TensorView& input) override;

  // The sums so far as imatrix entries (sums rounded to f32), with no datasets or chunk keys.
  quantize::Imatrix entries() const;

 private:
  struct Sums {
    std::vector<double> squares;  // per matrix, per input column
    std::vector<int64_t> tokens;  // per matrix
  };
  struct Matrix {
    std::string name;     // the tensor's
    int64_t index = 0;    // the expert, for a 3-D tensor
    int64_t count = 1;    // matrices in the tensor
  };
  backend::Backend& backend_;
  std::unordered_map<const void*, Matrix> matrices_;  // weight (or expert slice) data -> which
  std::unordered_map<std::string, Sums> sums_;
  std::vector<float> host_;  // the input rows, copied to the host
};

}  // namespace lumen::tools
