#pragma once
// A model bigger than one device's memory (issue 48; llama.cpp's --n-gpu-layers): one forward
// pass over two backends. The first backend (the one the Transformer is built with) embeds the
// tokens and runs layers [0, first_layer); the second runs layers [first_layer, n_layers) and
// the output head. Between them sits one seam, where the hidden states of the batch's rows are
// copied once from the first backend's memory to the second's. Each layer's K/V blocks live in
// the memory of the backend that runs the layer, named by the same block tables
// (model/kv_cache.h), so the serving core sees one pool of blocks.
//
// Nothing here knows which backend is which: `lumen --device cuda --n-gpu-layers N` puts the
// CPU first and the GPU second (model/gpu_layers.h counts N as llama.cpp does), and the tests
// split a model between two CPU backends and expect the logits of one, bit for bit.
#include <cstdint>

namespace lumen::backend {
class Backend;
}

namespace lumen::model {

struct BackendSplit {
  backend::Backend* second = nullptr;  // null: the whole model on the first backend
  uint64_t first_layer = 0;            // the first layer the second backend runs (<= n_layers)

  bool active() const { return second != nullptr; }
};

}  // namespace lumen::model
