#include "engine/prompt_kv_store.h"

#include <algorithm>

namespace lumen::engine {

size_t StoredPromptKv::bytes() const {
  size_t total = tokens.size() * sizeof(int32_t) + page_block.size() * sizeof(size_t);
  for (const auto& page : pages) total += page.size();
  return total;
}

void PromptKvStore::add(StoredPromptKv entry) {
  const size_t size = entry.bytes();
  std::lock_guard lock(mutex_);
  if (size > capacity_) {
    ++counters_.evicted;
    return;
  }
  while (!entries_.empty() && bytes_ + size > capacity_) {
    bytes_ -= entries_.front().bytes();
    entries_.pop_front();
    ++counters_.evicted;
  }
  bytes_ += size;
  entries_.push_back(std::move(entry));
  ++counters_.stored;
}

std::optional<PromptKv> PromptKvStore::take(uint64_t request_id, std::span<const int32_t> prompt, uint64_t keyed_salt,
                                            int64_t n_known, int64_t block_size) {
  StoredPromptKv entry;
  {
    std::lock_guard lock(mutex_);
    const auto it = std::ranges::find(entries_, request_id, &StoredPromptKv::request_id);
    if (it == entries_.end() || it->keyed_salt != keyed_salt || it->tokens.size() > prompt.size() ||
        !std::ranges::equal(it->tokens, prompt.first(it->tokens.size()))) {
      return std::nullopt;
    }
    bytes_ -= it->bytes();
    entry = std::move(*it);
    entries_.erase(it);
    ++counters_.taken;
  }
  PromptKv kv;
  kv.n_known = std::clamp<int64_t>(n_known, 0, std::ssize(entry.tokens)) / block_size * block_size;
  for (size_t i = 0; i < entry.pages.size(); ++i) {
    if (static_cast<int64_t>(entry.page_block[i]) >= kv.n_known / block_size) kv.pages.push_back(std::move(entry.pages[i]));
  }
  kv.tokens = std::move(entry.tokens);
  return kv;
}

PromptKvStoreCounters PromptKvStore::counters() const {
  std::lock_guard lock(mutex_);
  return counters_;
}

}  // namespace lumen::engine
