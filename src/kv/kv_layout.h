#pragma once
// How a model's layers share KV blocks when some of them attend only to a sliding window.
//
// Layers are split into groups of equal size; a group's layers all have the same window (0 for
// full attention). Each group has its own block table per sequence, and every block (a "page")
// holds group_size layers' K/V for block_size positions, whichever group it belongs to. One pool
// of equal pages then serves every group: a windowed group releases the blocks that fell out of
// its window, and the freed pages go to whoever needs them next (vLLM's hybrid allocator does the
// same). Gemma 3 270M, 15 local layers and 3 global ones, gets groups of 3: five windowed groups
// that each hold about window / block_size blocks per sequence, and one group that holds all.
//
// A model without windows (or with freeing turned off) has one group of every layer: exactly the
// single block table the cache had before groups existed.
#include <cstdint>
#include <span>
#include <vector>

namespace lumen::kv {

struct KvGroup {
  int64_t window = 0;        // keys a query sees: positions (pos - window, pos]; 0 = all
  std::vector<int> layers;   // in layer order; layers[i] lives in page slot i
};

struct KvLayout {
  int64_t group_size = 0;            // layers per page
  std::vector<KvGroup> groups;       // full-attention groups first: group 0 anchors prefix keys
  std::vector<int> group_of_layer;   // per model layer
  std::vector<int> slot_of_layer;    // per model layer: its index within its group's page (-1: not here)

  size_t n_groups() const { return groups.size(); }
  bool has_windows() const;
  // Pages one sequence holds at most while its positions [0, n_tokens) are computed, a step
  // computing at most max_chunk of them (the engine's max_num_batched_tokens). While a step
  // computes positions [s, e), a windowed group holds its blocks from the one the query at s
  // needs (first_block_in_window(s)) to the one that holds e - 1: a long prefill chunk keeps
  // its whole span plus a window behind it, a decode step (max_chunk 1) one window.
  int64_t pages_for(int64_t n_tokens, int64_t block_size, int64_t max_chunk) const;
  // The longest sequence n_pages pages can hold on their own, in steps of at most max_chunk.
  int64_t max_tokens(int64_t n_pages, int64_t block_size, int64_t max_chunk) const;
  // Layers whose K/V this layout keeps (all of the model's but on a pipeline stage).
  int64_t n_layers_held() const;
};

// Groups layers by their window (`layer_windows[l]`, 0 for full attention). With
// free_out_of_window false, or when no layer has a window, one group holds every layer.
KvLayout make_kv_layout(std::span<const int64_t> layer_windows, bool free_out_of_window);

// Pipeline parallelism: what the stage holding layers [first, end) keeps of `whole`. The groups,
// their windows and so their block tables are the same on every stage (rank 0 decides them for
// all); each group keeps only the stage's layers, in page slots numbered from 0 on the stage, so
// a stage's pages are as wide as its widest group there (its share of the layers when no layer
// has a window). The other layers get slot -1.
KvLayout stage_kv_layout(const KvLayout& whole, int first, int end);

// A hybrid (attention and Mamba 2 layers): what `whole` keeps of the layers that attend
// (ssm_layers[l] false); a Mamba 2 layer keeps a recurrent state instead (model/state_cache.h)
// and gets slot -1, so a page is as wide as the attention layers alone.
KvLayout attention_kv_layout(const KvLayout& whole, const std::vector<bool>& ssm_layers);

// The first block a windowed group must still hold once positions [0, n_computed) are in the
// cache: every later query sits at n_computed or beyond and sees keys from n_computed - window + 1.
int64_t first_block_in_window(int64_t n_computed, int64_t window, int64_t block_size);

// Moving a prompt's K/V between engines (disaggregated prefill and decode): the blocks a query
// at n_tokens needs of positions [n_known, n_tokens), both whole blocks, group by group and in
// position order within a group (each group from max(n_known, its window's first block)). Sender
// and receiver list the same blocks in the same order, so a page's place names its block.
struct TransferBlock {
  size_t group;
  size_t index;  // position block: positions [index * block_size, (index + 1) * block_size)
};
std::vector<TransferBlock> transfer_blocks(const KvLayout& layout, int64_t n_known, int64_t n_tokens,
                                           int64_t block_size);

}  // namespace lumen::kv
