#pragma once
// A bounded, thread-safe cache from a word (its raw bytes) to its token ids. Text repeats its
// words, and merging a word costs far more than a hash lookup. The cache is split into shards,
// each behind its own mutex, so threads encoding at once rarely wait on each other; a shard
// that fills up is emptied (cheap, and the common words come straight back).
#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lumen::tokenizer {

class WordCache {
 public:
  static constexpr size_t kShards = 16;
  static constexpr size_t kEntriesPerShard = 4096;
  static constexpr size_t kMaxWordBytes = 64;  // longer words are rare: not worth keeping

  // Appends the cached ids of `word` to `out`; false when it is not cached.
  bool lookup(std::string_view word, std::vector<int32_t>& out) const;
  void insert(std::string_view word, const int32_t* ids, size_t count) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct Shard {
    std::mutex mutex;
    std::unordered_map<std::string, std::vector<int32_t>, Hash, std::equal_to<>> entries;
  };
  Shard& shard_of(std::string_view word) const {
    return shards_[Hash{}(word) % kShards];
  }
  // A cache is not part of the tokenizer's observable state; const methods may fill it.
  mutable std::array<Shard, kShards> shards_;
};

inline bool WordCache::lookup(std::string_view word, std::vector<int32_t>& out) const {
  if (word.size() > kMaxWordBytes) return false;
  Shard& shard = shard_of(word);
  std::lock_guard lock(shard.mutex);
  auto it = shard.entries.find(word);
  if (it == shard.entries.end()) return false;
  out.insert(out.end(), it->second.begin(), it->second.end());
  return true;
}

inline void WordCache::insert(std::string_view word, const int32_t* ids, size_t count) const {
  if (word.size() > kMaxWordBytes) return;
  Shard& shard = shard_of(word);
  std::lock_guard lock(shard.mutex);
  if (shard.entries.size() >= kEntriesPerShard) shard.entries.clear();
  shard.entries.try_emplace(std::string(word), ids, ids + count);
}

}  // namespace lumen::tokenizer
