#include "kv/kv_layout.h"

#include <algorithm>
#include <map>
#include <numeric>

#include "util/error.h"

namespace lumen::kv {

bool KvLayout::has_windows() const {
  return std::ranges::any_of(groups, [](const KvGroup& g) { return g.window > 0; });
}

int64_t first_block_in_window(int64_t n_computed, int64_t window, int64_t block_size) {
  if (window <= 0) return 0;
  return std::max<int64_t>(0, n_computed - window + 1) / block_size;
}

int64_t KvLayout::pages_for(int64_t n_tokens, int64_t block_size, int64_t max_chunk) const {
  // The pages held during the step that computes [max(0, e - max_chunk), e): the longest step
  // ending at e holds the most. That count grows with e until a group's window and chunk fit
  // behind e, then repeats with period block_size (both ends of a group's span move one block
  // per block_size positions), so the worst e <= n_tokens lies among the last two blocks' worth.
  // (Until 2026-11-26 only the decode step was counted, from first_block_in_window(n_tokens - 1):
  // Gemma 3 with a context of 700 then took a 605-token prompt it could not prefill, and ended it
  // with no tokens.)
  const int64_t chunk = std::max<int64_t>(1, max_chunk);
  int64_t most = 0;
  for (int64_t e = std::max<int64_t>(1, n_tokens - 2 * block_size + 1); e <= n_tokens; ++e) {
    const int64_t blocks = (e + block_size - 1) / block_size;
    const int64_t start = std::max<int64_t>(0, e - chunk);
    int64_t pages = 0;
    for (const KvGroup& g : groups)
      pages += blocks - std::min(first_block_in_window(start, g.window, block_size), blocks);
    most = std::max(most, pages);
  }
  return most;
}

int64_t KvLayout::n_layers_held() const {
  return std::ranges::count_if(slot_of_layer, [](int slot) { return slot >= 0; });
}

int64_t KvLayout::max_tokens(int64_t n_pages, int64_t block_size, int64_t max_chunk) const {
  // pages_for never decreases with the length; it stops growing when every group is windowed.
  // Bisection over whole blocks, up to a bound no context reaches.
  int64_t lo = 0, hi = int64_t{1} << 36;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (pages_for(mid * block_size, block_size, max_chunk) <= n_pages) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo * block_size;
}

KvLayout make_kv_layout(std::span<const int64_t> layer_windows, bool free_out_of_window) {
  if (layer_windows.empty()) fail("kv layout: a model without layers");
  const int n_layers = static_cast<int>(layer_windows.size());
  KvLayout layout;
  layout.group_of_layer.assign(layer_windows.size(), 0);
  layout.slot_of_layer.assign(layer_windows.size(), 0);
  // Layers by window, full attention (0) first so that group 0 is a full one when any exists.
  std::map<int64_t, std::vector<int>> by_window;
  for (int l = 0; l < n_layers; ++l) {
    const int64_t w = layer_windows[static_cast<size_t>(l)];
    if (w < 0) fail("kv layout: layer {} has a negative window {}", l, w);
    by_window[free_out_of_window ? w : 0].push_back(l);
  }
  int64_t size = 0;
  for (const auto& [window, layers] : by_window) size = std::gcd(size, static_cast<int64_t>(layers.size()));
  layout.group_size = size;
  for (const auto& [window, layers] : by_window) {
    for (size_t first = 0; first < layers.size(); first += static_cast<size_t>(size)) {
      KvGroup group;
      group.window = window;
      group.layers.assign(layers.begin() + static_cast<ptrdiff_t>(first),
                          layers.begin() + static_cast<ptrdiff_t>(first + static_cast<size_t>(size)));
      for (size_t slot = 0; slot < group.layers.size(); ++slot) {
        layout.group_of_layer[static_cast<size_t>(group.layers[slot])] = static_cast<int>(layout.groups.size());
        layout.slot_of_layer[static_cast<size_t>(group.layers[slot])] = static_cast<int>(slot);
      }
      layout.groups.push_back(std::move(group));
    }
  }
  return layout;
}

namespace {

// `whole` keeping only the layers `held` accepts, in page slots numbered from 0; the others get
// slot -1 (no K/V). The groups and their windows stay, so block tables are unchanged.
template <typename Held>
KvLayout keep_layers(const KvLayout& whole, Held held) {
  KvLayout kept = whole;
  kept.slot_of_layer.assign(whole.slot_of_layer.size(), -1);
  kept.group_size = 1;
  for (KvGroup& group : kept.groups) {
    std::erase_if(group.layers, [&](int layer) { return !held(layer); });
    for (size_t slot = 0; slot < group.layers.size(); ++slot) {
      kept.slot_of_layer[static_cast<size_t>(group.layers[slot])] = static_cast<int>(slot);
    }
    kept.group_size = std::max(kept.group_size, static_cast<int64_t>(group.layers.size()));
  }
  return kept;
}

}  // namespace

KvLayout stage_kv_layout(const KvLayout& whole, int first, int end) {
  const int n_layers = static_cast<int>(whole.group_of_layer.size());
  if (first < 0 || first >= end || end > n_layers) {
    fail("kv layout: layers {}..{} are not a stage of a model of {} layers", first, end, n_layers);
  }
  return keep_layers(whole, [&](int layer) { return layer >= first && layer < end; });
}

KvLayout attention_kv_layout(const KvLayout& whole, const std::vector<bool>& ssm_layers) {
  if (ssm_layers.size() != whole.group_of_layer.size()) {
    fail("kv layout: {} layer kinds for a model of {} layers", ssm_layers.size(), whole.group_of_layer.size());
  }
  return keep_layers(whole, [&](int layer) { return !ssm_layers[static_cast<size_t>(layer)]; });
}

}  // namespace lumen::kv

namespace lumen::kv {

std::vector<TransferBlock> transfer_blocks(const KvLayout& layout, int64_t n_known, int64_t n_tokens,
                                           int64_t block_size) {
  if (block_size <= 0 || n_known < 0 || n_known > n_tokens || n_known % block_size != 0 ||
      n_tokens % block_size != 0) {
    fail("kv: a transfer of positions [{}, {}) is not whole blocks of {}", n_known, n_tokens, block_size);
  }
  const int64_t end = n_tokens / block_size;
  std::vector<TransferBlock> blocks;
  for (size_t g = 0; g < layout.groups.size(); ++g) {
    const int64_t first = std::max(n_known / block_size, first_block_in_window(n_tokens, layout.groups[g].window, block_size));
    for (int64_t i = first; i < end; ++i) blocks.push_back({g, static_cast<size_t>(i)});
  }
  return blocks;
}

}  // namespace lumen::kv
