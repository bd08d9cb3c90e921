#pragma once
// Backend memory for keys and values, in fixed-size blocks per layer. Which block belongs to
// which sequence is decided elsewhere (the block pool of the serving core); this only owns the
// memory and hands out each layer's view.
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/hparams.h"

namespace lumen::model {

class KvCache {
 public:
  KvCache(backend::Backend& backend, const HParams& hp, int64_t n_blocks, int64_t block_size,
          tensor::DType type = tensor::DType::F16);

  // Bytes of K and V, all layers, for one block: what the pool size is computed from.
  static size_t bytes_per_block(const HParams& hp, int64_t block_size,
                                tensor::DType type = tensor::DType::F16);

  backend::KvLayer& layer(size_t index) { return layers_[index]; }
  size_t n_layers() const { return layers_.size(); }
  // Copy-on-write: block dst of every layer becomes a copy of block src.
  void copy_block(int64_t src, int64_t dst);
  // Swapping: a block of every layer to host memory (block_host_bytes() bytes) and back.
  size_t block_host_bytes() const;
  void read_block(int64_t block, uint8_t* host) const;
  void write_block(int64_t block, const uint8_t* host);
  int64_t n_blocks() const { return n_blocks_; }
  int64_t block_size() const { return block_size_; }
  size_t bytes() const;

 private:
  backend::Backend& backend_;
  int64_t n_blocks_;
  int64_t block_size_;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  std::vector<backend::KvLayer> layers_;
};

}  // namespace lumen::model
