#pragma once
// Disaggregated prefill: the K/V of prompts this engine computed, kept in host memory until a
// decode engine takes them (lumen/prompt_kv.h). Bounded in bytes: the oldest entries go first,
// and an entry is taken at most once. A decode engine that finds nothing computes the prompt
// itself, so losing an entry costs time, never a request. Thread-safe: the engine's loop adds,
// any thread takes.
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "lumen/prompt_kv.h"

namespace lumen::engine {

struct StoredPromptKv {
  uint64_t request_id = 0;
  uint64_t keyed_salt = 0;             // the sequence's salt as its blocks were keyed (per process)
  std::vector<int32_t> tokens;         // the prompt's whole blocks
  std::vector<size_t> page_block;      // per page: its position block (kv::TransferBlock::index)
  std::vector<std::vector<uint8_t>> pages;
  size_t bytes() const;
};

struct PromptKvStoreCounters {
  uint64_t stored = 0;
  uint64_t taken = 0;
  uint64_t evicted = 0;  // dropped for room before anyone took them
};

class PromptKvStore {
 public:
  explicit PromptKvStore(size_t capacity_bytes) : capacity_(capacity_bytes) {}

  // Keeps the entry, dropping the oldest ones until it fits; an entry larger than the whole
  // store is not kept.
  void add(StoredPromptKv entry);
  // The entry of request_id when its tokens begin `prompt` and its salt is keyed_salt (whoever
  // asks must know the prompt), with the pages of position blocks from n_known / block_size on;
  // the entry is removed. nullopt when there is none, or it does not match.
  std::optional<PromptKv> take(uint64_t request_id, std::span<const int32_t> prompt, uint64_t keyed_salt,
                               int64_t n_known, int64_t block_size);
  PromptKvStoreCounters counters() const;

 private:
  size_t capacity_;
  mutable std::mutex mutex_;
  std::deque<StoredPromptKv> entries_;  // oldest first
  size_t bytes_ = 0;
  PromptKvStoreCounters counters_;
};

}  // namespace lumen::engine
