// SequenceBlocks: lifetime, reserve (with copy-on-write), fork and truncate. The prefix cache
// side (adopt_cached_prefix, commit) is in sequence_prefix.cc.
#include "kv/sequence_blocks.h"

#include <algorithm>
#include <limits>
#include <utility>

#include "util/error.h"

namespace lumen::kv {

SequenceBlocks::SequenceBlocks(BlockPool& pool, uint64_t cache_salt) : pool_(&pool), salt_(cache_salt) {}

SequenceBlocks::~SequenceBlocks() { release_all(); }

SequenceBlocks::SequenceBlocks(SequenceBlocks&& other) noexcept
    : pool_(other.pool_),
      salt_(other.salt_),
      block_salts_(std::exchange(other.block_salts_, {})),
      table_(std::exchange(other.table_, {})),
      chain_(std::exchange(other.chain_, {})),
      first_held_(std::exchange(other.first_held_, 0)),
      unpublishable_from_(std::exchange(other.unpublishable_from_, SIZE_MAX)) {}

SequenceBlocks& SequenceBlocks::operator=(SequenceBlocks&& other) noexcept {
  if (this != &other) {
    release_all();
    pool_ = other.pool_;
    salt_ = other.salt_;
    block_salts_ = std::exchange(other.block_salts_, {});
    table_ = std::exchange(other.table_, {});
    chain_ = std::exchange(other.chain_, {});
    first_held_ = std::exchange(other.first_held_, 0);
    unpublishable_from_ = std::exchange(other.unpublishable_from_, SIZE_MAX);
  }
  return *this;
}

void SequenceBlocks::check_range(int64_t n_computed, int64_t n, const char* what) const {
  const int64_t bs = pool_->block_size();
  if (n_computed < 0 || n < 0 || n > std::numeric_limits<int64_t>::max() - n_computed) {
    fail("kv: {}(n_computed={}, n={}): negative or overflowing range", what, n_computed, n);
  }
  if (n_computed > std::ssize(table_) * bs) {
    fail("kv: {} at position {}, but the sequence's blocks end at {}", what, n_computed,
         std::ssize(table_) * bs);
  }
  if (n > 0 && n_computed < std::ssize(chain_) * bs) {
    fail("kv: {} at position {} would rewrite committed block {} (truncate first)", what, n_computed,
         n_computed / bs);
  }
}

bool SequenceBlocks::must_replace(size_t index) const {
  const BlockId id = table_[index];
  return pool_->ref_count(id) > 1 || pool_->is_published(id);
}

int32_t SequenceBlocks::blocks_needed(int64_t n_computed, int64_t n) const {
  check_range(n_computed, n, "blocks_needed");
  if (n == 0) return 0;
  const int64_t bs = pool_->block_size();
  const int64_t end_block = (n_computed + n - 1) / bs + 1;  // one past the last block written
  const int64_t held = std::ssize(table_);
  int64_t needed = std::max<int64_t>(0, end_block - held);
  for (int64_t i = n_computed / bs; i < std::min(end_block, held); ++i) needed += must_replace(i);
  return static_cast<int32_t>(std::min<int64_t>(needed, std::numeric_limits<int32_t>::max()));
}

bool SequenceBlocks::reserve(int64_t n_computed, int64_t n, std::vector<BlockCopy>& copies) {
  const int32_t needed = blocks_needed(n_computed, n);
  if (needed > pool_->n_available()) return false;
  if (n == 0) return true;
  const int64_t bs = pool_->block_size();
  const int64_t first = n_computed / bs;
  const int64_t end_block = (n_computed + n - 1) / bs + 1;
  const int64_t held = std::ssize(table_);
  // Appends first, then replacements from the back: the one block whose rows get copied (the
  // first) is released last, after every allocation, so this call never hands out its own source.
  while (std::ssize(table_) < end_block) table_.push_back(*pool_->allocate());
  for (int64_t i = std::min(end_block, held) - 1; i >= first; --i) {
    if (!must_replace(i)) continue;
    const BlockId old = table_[i];
    const BlockId fresh = *pool_->allocate();
    if (i == first && n_computed % bs != 0) copies.push_back({old, fresh});
    table_[i] = fresh;
    pool_->release(old);
  }
  return true;
}

SequenceBlocks SequenceBlocks::fork() const {
  SequenceBlocks child(*pool_, salt_);
  child.block_salts_ = block_salts_;
  child.table_ = table_;
  child.chain_ = chain_;
  child.first_held_ = first_held_;
  child.unpublishable_from_ = unpublishable_from_;
  for (size_t i = first_held_; i < table_.size(); ++i) pool_->retain(table_[i]);
  return child;
}

void SequenceBlocks::release_from(size_t first) {
  while (table_.size() > first) {
    if (table_.size() > first_held_) pool_->release(table_.back());
    table_.pop_back();
  }
  first_held_ = std::min(first_held_, table_.size());
}

void SequenceBlocks::drop_before(size_t first, BlockId null_block) {
  for (size_t i = first_held_; i < std::min(first, table_.size()); ++i) {
    pool_->release(table_[i]);
    table_[i] = null_block;
  }
  while (table_.size() < first) table_.push_back(null_block);
  // Dropped blocks were committed before (commit publishes, then the caller drops); a table
  // extended with null entries has no chain there, and nothing below can be found again.
  while (chain_.size() < first) chain_.push_back({0, kNotCached});
  first_held_ = std::max(first_held_, first);
}

void SequenceBlocks::truncate(int64_t n_tokens) {
  if (n_tokens < 0) fail("kv: truncate to {} tokens", n_tokens);
  const int64_t bs = pool_->block_size();
  if (n_tokens < std::ssize(table_) * bs && n_tokens / bs < static_cast<int64_t>(first_held_)) {
    fail("kv: truncate to {} tokens, but blocks below {} were dropped", n_tokens,
         static_cast<int64_t>(first_held_) * bs);
  }
  const int64_t keep = n_tokens / bs + (n_tokens % bs != 0);
  if (keep < std::ssize(table_)) release_from(static_cast<size_t>(keep));
  // A block cut in the middle leaves the chain: its tail will be rewritten (into a copy).
  if (n_tokens / bs < std::ssize(chain_)) chain_.resize(static_cast<size_t>(n_tokens / bs));
}

std::optional<std::vector<BlockId>> SequenceBlocks::shift(size_t keep, size_t discard, std::vector<BlockCopy>& copies) {
  if (first_held_ > 0) fail("kv: context shift of a sequence whose early blocks were dropped");
  if (discard == 0 || keep + discard > table_.size()) {
    fail("kv: shift of blocks [{}, {}) in a table of {}", keep, keep + discard, table_.size());
  }
  // The moved blocks are rewritten (rotated). One held elsewhere too is copied; one held only
  // here is unpublished (its cached content was this sequence's alone). Count the copies, and
  // the room the discarded blocks leave, before changing anything.
  int32_t copies_needed = 0, freed = 0;
  for (size_t i = keep + discard; i < table_.size(); ++i) copies_needed += pool_->ref_count(table_[i]) > 1;
  for (size_t i = keep; i < keep + discard; ++i) freed += pool_->ref_count(table_[i]) == 1;
  if (copies_needed > pool_->n_available() + freed) return std::nullopt;
  for (size_t i = keep; i < keep + discard; ++i) pool_->release(table_[i]);
  for (size_t i = keep + discard; i < table_.size(); ++i) {
    if (pool_->ref_count(table_[i]) == 1) {
      pool_->unpublish(table_[i]);
      continue;
    }
    const BlockId fresh = *pool_->allocate();
    copies.push_back({table_[i], fresh});
    pool_->release(table_[i]);  // shared: still held by the others
    table_[i] = fresh;
  }
  table_.erase(table_.begin() + static_cast<ptrdiff_t>(keep),
               table_.begin() + static_cast<ptrdiff_t>(keep + discard));
  if (chain_.size() > keep) chain_.resize(keep);
  unpublishable_from_ = std::min(unpublishable_from_, keep);
  return std::vector<BlockId>(table_.begin() + static_cast<ptrdiff_t>(keep), table_.end());
}

std::optional<SequenceBlocks::Compaction> SequenceBlocks::compact(int64_t n_keep) {
  if (first_held_ > 0) fail("kv: compaction of a sequence whose early blocks were dropped");
  const int64_t bs = pool_->block_size();
  const auto n_dst = static_cast<size_t>((n_keep + bs - 1) / bs);
  if (n_keep <= 0 || n_dst > table_.size())
    fail("kv: compaction to {} positions of a table of {} blocks", n_keep, table_.size());
  int32_t fresh_needed = 0;
  for (size_t i = 0; i < n_dst; ++i) fresh_needed += pool_->ref_count(table_[i]) > 1;
  if (fresh_needed > pool_->n_available()) return std::nullopt;
  // Room left after the shared blocks' replacements goes to the published ones too: the prefix
  // cache keeps them (a shared system prompt, for the next request) rather than losing them.
  int32_t spare = pool_->n_available() - fresh_needed;
  Compaction c;
  c.src = table_;
  for (size_t i = 0; i < n_dst; ++i) {
    const bool shared = pool_->ref_count(table_[i]) > 1, published = pool_->is_published(table_[i]);
    if (shared || (published && spare > 0)) {
      if (!shared) --spare;
      const BlockId fresh = *pool_->allocate();
      pool_->release(table_[i]);  // its content stays: the gather reads it, others may hold it
      table_[i] = fresh;
    } else if (published) {
      pool_->unpublish(table_[i]);
    }
  }
  release_from(n_dst);  // their content stays what it was: still valid where published
  chain_.clear();
  unpublishable_from_ = 0;
  c.dst = table_;
  return c;
}

void SequenceBlocks::release_all() {
  release_from(0);
  chain_.clear();
}

}  // namespace lumen::kv
