#pragma once
// The KV blocks of one sequence (its block table) and the hash chain of its full blocks. The
// scheduler asks it to make positions writable before a step (reserve), and tells it what was
// computed after the step (commit), which publishes newly full blocks in the prefix cache.
//
// Safety rule: a sequence writes K/V only into blocks no one else can read. reserve() replaces a
// block it is about to write when the block is shared (forks) or published (after truncate()), and
// reports a BlockCopy when that block already holds rows of this sequence. Full committed blocks
// are never written again: positions below them are only rewritable after truncate().
//
// Sliding-window layers (see kv/kv_layout.h) drop the blocks no later query can see:
// drop_before() releases the leading blocks and leaves the shared, never-written null block in
// their table entries, so positions keep their block index and kernels never read a freed block.
// A sequence's blocks are keyed either by their own chain (the anchor group) or by the anchor's
// chain (the other groups of a layer-grouped cache): the anchor's block i names the prefix
// [0, (i + 1) * block_size) exactly, so it also names the other groups' block i.
#include <cstdint>
#include <cstddef>
#include <optional>
#include <span>
#include <vector>

#include "kv/block_pool.h"

namespace lumen::kv {

class SequenceBlocks {
 public:
  struct ChainLink {
    BlockHash hash;     // the chain hash, parent of the next block's
    ContentId content;  // the published content equal to this block's, or kNotCached
  };

  // Sequences with different salts never share cached blocks (tenant isolation).
  explicit SequenceBlocks(BlockPool& pool, uint64_t cache_salt = 0);

  // A block keyed by more than its tokens: one holding positions of an image (whose token ids
  // are placeholders) is keyed by the image's content too, so the same tokens with another
  // image never share its K/V. The extra salt joins the sequence's salt for that block alone;
  // the blocks after it differ through the chain (their parent is another content).
  struct BlockSalt {
    size_t block = 0;
    uint64_t salt = 0;
  };
  // Sorted by block, one entry per block at most. For a sequence holding no blocks yet; forks
  // inherit them.
  void salt_blocks(std::vector<BlockSalt> salts);
  // The salt block `index` is keyed with.
  uint64_t salt_of(size_t index) const;
  ~SequenceBlocks();  // releases every block it holds
  SequenceBlocks(SequenceBlocks&& other) noexcept;
  SequenceBlocks& operator=(SequenceBlocks&& other) noexcept;
  SequenceBlocks(const SequenceBlocks&) = delete;
  SequenceBlocks& operator=(const SequenceBlocks&) = delete;

  // On an empty sequence: reuses (retains) the cached full blocks of the longest cached prefix of
  // `tokens`, at most `max_tokens` tokens (whole blocks only), and returns how many tokens' K/V
  // is therefore already present. Counts queries/hits unless `counted` is false (a lookup that
  // is not a request's: moving K/V between engines). Stops at the first miss.
  int64_t adopt_cached_prefix(std::span<const int32_t> tokens, int64_t max_tokens, bool counted = true);
  // How many new blocks reserve(n_computed, n) would allocate (including copy-on-write copies).
  int32_t blocks_needed(int64_t n_computed, int64_t n) const;
  // Makes positions [n_computed, n_computed + n) writable: allocates the missing blocks, and
  // replaces each block in that range that is shared or published by a fresh one, appending
  // {old, new} to copies when the old block holds rows below n_computed. Returns false and
  // changes nothing when the pool has too few available blocks.
  bool reserve(int64_t n_computed, int64_t n, std::vector<BlockCopy>& copies);
  // After the K/V of tokens[0, n_computed) is in the cache: publishes every newly full block in
  // the prefix cache. `tokens` is the sequence's whole token list so far (prompt + generated).
  // With an anchor chain (another group's chain(), at least as long), block i is published under
  // the anchor's block i instead of this sequence's own chain.
  void commit(std::span<const int32_t> tokens, int64_t n_computed, std::span<const ChainLink> anchor = {});
  // Keyed by an anchor chain: the cached block i of this group's content, without counting a
  // lookup or retaining it.
  std::optional<CachedBlock> find_keyed(std::span<const ChainLink> anchor, std::span<const int32_t> tokens,
                                    size_t index) const;
  // On an empty sequence: null entries for blocks [0, first), then the cached blocks
  // [first, end) keyed by the anchor, retained. All or nothing: false (holding nothing) on a miss.
  bool adopt_keyed(std::span<const ChainLink> anchor, std::span<const int32_t> tokens, size_t first, size_t end,
                   BlockId null_block);
  // Releases the held blocks below block index `first` and points their entries at null_block;
  // a shorter table is extended with null entries up to `first` (a sequence whose early blocks
  // are gone for good). Those entries are never written, published or released.
  void drop_before(size_t first, BlockId null_block);
  // A new sequence sharing every block of this one (n > 1, beam search): retains all.
  SequenceBlocks fork() const;
  // Keeps the blocks of the first n_tokens positions and releases the rest.
  void truncate(int64_t n_tokens);
  // Context shift: releases blocks [keep, keep + discard) and moves the later ones down to
  // `keep`, so their positions drop by discard * block_size. Their keys must then be rotated
  // back by that many positions, so each of them is first made this sequence's own (a copy,
  // appended to copies, where it is shared or published) and none of them, nor any later block,
  // is ever published: their K/V is no longer what the tokens alone would give. Returns the
  // moved blocks (to rotate), or nullopt, changing nothing, when the pool lacks the blocks for
  // the copies. Not for a table with dropped (null) entries.
  std::optional<std::vector<BlockId>> shift(size_t keep, size_t discard, std::vector<BlockCopy>& copies);
  // Importance-based eviction (engine/kv_importance.h): the sequence keeps n_keep of its
  // positions, gathered head by head into the first ceil(n_keep / block_size) blocks of its
  // table; the later blocks are released. A kept block shared with another sequence is replaced
  // by a fresh one (the gather writes it whole), and so is a published one while the pool has
  // room (else it is unpublished and rewritten in place), and nothing of this sequence is
  // published again: its K/V no longer matches its tokens' prefix. Returns
  // the table before and after (the gather's source and destination: a released block must be
  // read before anything else writes it), or nullopt, changing nothing, when the pool lacks the
  // fresh blocks. Not for a table with dropped (null) entries.
  struct Compaction {
    std::vector<BlockId> src, dst;
  };
  std::optional<Compaction> compact(int64_t n_keep);
  // Releases every block, last first, so the LRU evicts a prompt's tail before its head (heads
  // are the parts other requests share: system prompts, few-shot examples).
  void release_all();

  // Position p lives in table()[p / block_size].
  std::span<const BlockId> table() const { return table_; }
  uint64_t cache_salt() const { return salt_; }
  // Leading full blocks whose content is committed or adopted (their hash chain is known).
  int32_t n_committed_blocks() const { return static_cast<int32_t>(chain_.size()); }
  std::span<const ChainLink> chain() const { return chain_; }
  // table()[first_held(), size) are held by this sequence; the entries before are null.
  size_t first_held() const { return first_held_; }
  size_t n_held() const { return table_.size() - first_held_; }

 private:
  void check_range(int64_t n_computed, int64_t n, const char* what) const;
  // Whether writing into table_[index] could be seen by another reader.
  bool must_replace(size_t index) const;
  ChainLink parent_of(size_t index) const;
  void release_from(size_t first);  // releases table_[first..], last first

  BlockPool* pool_;
  uint64_t salt_;
  std::vector<BlockSalt> block_salts_;  // sorted by block
  std::vector<BlockId> table_;
  std::vector<ChainLink> chain_;  // one per leading full committed block
  size_t first_held_ = 0;         // entries before it are the null block, not held
  size_t unpublishable_from_ = SIZE_MAX;  // blocks from here on are never published (shifted)
};

}  // namespace lumen::kv
