#pragma once
// Backend memory for keys and values, in fixed-size blocks ("pages"). Which block belongs to
// which sequence is decided elsewhere (the block pool of the serving core); this only owns the
// memory and hands out each layer's view. A page holds the K/V of one group of layers
// (kv/kv_layout.h): every layer of the model when no layer has a sliding window, otherwise
// group_size layers, and layers at the same place of different groups share one view (a page
// belongs to one group at a time, so they never meet in the same page).
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "kv/kv_layout.h"
#include "model/backend_split.h"
#include "model/hparams.h"

namespace lumen::model {

// Throws lumen::Error, one line, unless `backend` can hold this model's KV cache in `type`: a KV
// cache type (backend::is_kv_cache_type) the backend supports, with heads of whole blocks.
void check_kv_cache_type(const backend::Backend& backend, const HParams& hp, tensor::DType type);

// Whether a cache of `type` for this model stores its heads Hadamard-rotated
// (backend::KvLayer::rotated) when rotation is asked for: the quantized types (q8_0, q4_0,
// fp8_e4m3; f16, bf16 and f32 gain nothing), keys and values of the same power-of-two width,
// and values of their own (not multi-head latent attention's view of the keys).
bool rotates_kv_cache(const HParams& hp, tensor::DType type);

class KvCache {
 public:
  // One group of every layer. `type`: the element type of K and V (check_kv_cache_type).
  // `rotate`: store heads rotated where rotates_kv_cache says it pays (--no-kv-cache-rotation
  // turns it off, to measure what it buys).
  KvCache(backend::Backend& backend, const HParams& hp, int64_t n_blocks, int64_t block_size,
          tensor::DType type = tensor::DType::F16, bool rotate = true);
  // With an active split (model/backend_split.h, Transformer::split): each layer's K/V in the
  // memory of the backend that runs it (a part of the page on each), under the same block
  // tables. `backend` is the first backend.
  KvCache(backend::Backend& backend, const HParams& hp, kv::KvLayout layout, int64_t n_blocks, int64_t block_size,
          tensor::DType type = tensor::DType::F16, bool rotate = true, const BackendSplit& split = {});

  // Bytes of K and V, all layers, for one position block: a page of the one-group layout.
  static size_t bytes_per_block(const HParams& hp, int64_t block_size,
                                tensor::DType type = tensor::DType::F16);
  // Bytes of one page of `layout`: what the pool size is computed from.
  static size_t bytes_per_page(const HParams& hp, const kv::KvLayout& layout, int64_t block_size,
                               tensor::DType type = tensor::DType::F16);
  // A split model's layouts, one per backend that holds layers (the first, then the second):
  // `whole` keeping that backend's layers (kv::stage_kv_layout). Unsplit: `whole` alone.
  static std::vector<kv::KvLayout> part_layouts(const kv::KvLayout& whole, const BackendSplit& split);

  // Model layer `index`'s view; its blocks are named by its group's block tables. Throws
  // lumen::Error for a layer this cache does not hold (another pipeline stage's).
  backend::KvLayer& layer(size_t index);
  size_t n_layers() const { return layout_.group_of_layer.size(); }
  const kv::KvLayout& layout() const { return layout_; }
  // Sets every byte of a block to zero (the null block of dropped window entries).
  void zero_block(int64_t block);
  // Copy-on-write: block dst of every layer becomes a copy of block src.
  void copy_block(int64_t src, int64_t dst);
  // Token-tree verification: the K/V at (block, slot) src copied to dst in every layer view, so
  // for every layer of the group whose blocks these are (call it once per group, each with its
  // own table's blocks).
  void copy_position(int64_t src_block, int64_t src_slot, int64_t dst_block, int64_t dst_slot);
  // Swapping: a block of every layer to host memory (block_host_bytes() bytes) and back.
  size_t block_host_bytes() const;
  void read_block(int64_t block, uint8_t* host) const;
  void write_block(int64_t block, const uint8_t* host);
  // Whether every K and V value of a host block (as read_block writes it) is finite: a page that
  // came from another process is checked before it is written, as NaN or infinite K/V would
  // silently turn every later token's attention into garbage.
  bool host_block_is_finite(const uint8_t* host) const;
  int64_t n_blocks() const { return n_blocks_; }
  int64_t block_size() const { return block_size_; }
  bool rotated() const;
  size_t bytes() const;

 private:
  // One backend's share of every page: its layers' views (slots of its layout).
  struct Part {
    backend::Backend* backend = nullptr;
    kv::KvLayout layout;                  // slot_of_layer: -1 for the other part's layers
    std::vector<backend::KvLayer> slots;  // group_size views over n_blocks pages
  };
  int64_t n_blocks_;
  int64_t block_size_;
  std::vector<std::unique_ptr<backend::Buffer>> buffers_;
  kv::KvLayout layout_;
  std::vector<Part> parts_;
};

}  // namespace lumen::model
