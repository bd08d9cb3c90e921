#pragma once
// A window onto the forward pass for tools that study activations (`lumen imatrix`): called
// with each decoder-layer weight matrix and the f32 input rows it is about to multiply, one call
// per weight per forward pass (Q, K and V see the same input, each called once). Not called for
// the output projection, whose input is only the sampled rows. Unset (the default) it costs one
// null check per matmul; the serving engine never sets one.
#include "backend/tensor_view.h"

namespace lumen::model {

class MatmulObserver {
 public:
  virtual ~MatmulObserver() = default;
  // `weight` is the matrix's view as the backend holds it (its data pointer identifies the
  // tensor); `input` is {in, n_tokens} f32 in the backend's memory, valid during the call.
  virtual void on_matmul(const backend::TensorView& weight, const backend::TensorView& input) = 0;
};

}  // namespace lumen::model
