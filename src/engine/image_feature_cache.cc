#include "engine/image_feature_cache.h"

#include <openssl/evp.h>

#include <array>
#include <cstring>

#include "util/error.h"

namespace lumen::engine {

ImageFeatureCache::Features ImageFeatureCache::find(const ImageContentHash& hash) {
  std::lock_guard lock(mutex_);
  const auto it = index_.find(hash);
  if (it == index_.end()) {
    ++misses_;
    return nullptr;
  }
  ++hits_;
  lru_.splice(lru_.begin(), lru_, it->second);
  return it->second->features;
}

void ImageFeatureCache::insert(const ImageContentHash& hash, Features features) {
  const size_t size = features->size() * sizeof(float);
  std::lock_guard lock(mutex_);
  if (size > max_bytes_ || index_.count(hash) != 0) return;
  while (bytes_ + size > max_bytes_) {
    const Entry& last = lru_.back();
    bytes_ -= last.bytes;
    index_.erase(last.hash);
    lru_.pop_back();
  }
  lru_.push_front({hash, std::move(features), size});
  index_.emplace(hash, lru_.begin());
  bytes_ += size;
}

uint64_t ImageFeatureCache::hits() const {
  std::lock_guard lock(mutex_);
  return hits_;
}

uint64_t ImageFeatureCache::misses() const {
  std::lock_guard lock(mutex_);
  return misses_;
}

size_t ImageFeatureCache::bytes() const {
  std::lock_guard lock(mutex_);
  return bytes_;
}

size_t ImageFeatureCache::entries() const {
  std::lock_guard lock(mutex_);
  return lru_.size();
}

ImageContentHash image_content_hash(const void* data, size_t size) {
  std::array<unsigned char, 32> digest{};
  unsigned int length = 0;
  if (EVP_Digest(data, size, digest.data(), &length, EVP_sha256(), nullptr) != 1 || length != digest.size()) {
    fail("SHA-256 of an image failed");
  }
  ImageContentHash hash{};
  std::memcpy(hash.data(), digest.data(), sizeof(hash));
  return hash;
}

}  // namespace lumen::engine
