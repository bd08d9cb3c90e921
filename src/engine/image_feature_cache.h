#pragma once
// The visual-feature cache: encoded images (an ImageEncoder's output) kept by content hash, so
// the second turn of a conversation about an image, or a second request sending it, does not
// run the vision encoder again. Least recently used first out, within a byte budget; a budget
// of 0 keeps nothing. Thread-safe: HTTP threads encode concurrently.
#include <cstddef>
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "lumen/prompt_image.h"

namespace lumen::engine {

class ImageFeatureCache {
 public:
  using Features = std::shared_ptr<const std::vector<float>>;

  explicit ImageFeatureCache(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The cached features of `hash` (now the most recently used), or null; counts a hit or a miss.
  Features find(const ImageContentHash& hash);
  // Keeps `features` under `hash`, dropping the least recently used entries to stay within the
  // budget; features larger than the whole budget are not kept.
  void insert(const ImageContentHash& hash, Features features);

  uint64_t hits() const;
  uint64_t misses() const;
  size_t bytes() const;
  size_t entries() const;

 private:
  struct Entry {
    ImageContentHash hash;
    Features features;
    size_t bytes;
  };
  const size_t max_bytes_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_;  // front: most recently used
  std::map<ImageContentHash, std::list<Entry>::iterator> index_;
  size_t bytes_ = 0;
  uint64_t hits_ = 0;
  uint64_t misses_ = 0;
};

// 128 bits of the SHA-256 of an image file's bytes: its identity in this cache and in the
// prefix cache's keys (a client cannot make two different images collide).
ImageContentHash image_content_hash(const void* data, size_t size);

}  // namespace lumen::engine
