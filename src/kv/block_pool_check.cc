// BlockPool::check_consistency: recomputes every derived fact from the per-block state and fails
// on the first disagreement. The property test calls it after every operation.
#include <vector>

#include "kv/block_pool.h"
#include "util/error.h"

namespace lumen::kv {

void BlockPool::check_consistency() const {
  std::vector<char> listed(n_blocks_, 0);
  auto walk = [&](const BlockList& list, bool published, const char* name) {
    int32_t count = 0;
    int32_t prev = -1;
    for (int32_t id = list.front(); id >= 0; id = links_[id].next) {
      if (id >= n_blocks_) fail("kv check: {} list holds id {}", name, id);
      if (listed[id]++) fail("kv check: block {} is listed twice", id);
      if (links_[id].prev != prev) fail("kv check: {} list: block {} has a bad back link", name, id);
      const BlockState& b = blocks_[id];
      if (b.ref_count != 0) fail("kv check: block {} on the {} list has ref_count {}", id, name, b.ref_count);
      if (b.published != published)
        fail("kv check: block {} on the {} list, published={}", id, name, b.published);
      prev = id;
      ++count;
    }
    if (prev != list.back())
      fail("kv check: {} list tail is {}, the walk ended at {}", name, list.back(), prev);
    if (count != list.size()) fail("kv check: {} list says {} blocks, holds {}", name, list.size(), count);
  };
  walk(free_, false, "free");
  walk(evictable_, true, "evictable");

  int32_t used = 0;
  int32_t published = 0;
  for (BlockId id = 0; id < n_blocks_; ++id) {
    const BlockState& b = blocks_[id];
    if (b.ref_count < 0) fail("kv check: block {} has ref_count {}", id, b.ref_count);
    if (b.ref_count > 0) ++used;
    if (b.ref_count == 0 && !listed[id]) fail("kv check: block {} is unreferenced but on no list", id);
    if (!b.published) continue;
    ++published;
    if (!prefix_caching_) fail("kv check: block {} is published with prefix caching off", id);
    if (index_.find(b.hash) != id) fail("kv check: published block {} is not indexed under its hash", id);
    if (b.content.block != id || b.content.serial == 0 || b.content.serial >= next_serial_) {
      fail("kv check: published block {} names content {}@{}", id, b.content.serial, b.content.block);
    }
  }
  if (used != n_used_) fail("kv check: {} blocks in use, n_used() says {}", used, n_used_);
  if (published != index_.size())
    fail("kv check: {} blocks published, the index holds {}", published, index_.size());
  if (n_available() + n_used_ != n_blocks_) {
    fail("kv check: {} available + {} used != {} blocks", n_available(), n_used_, n_blocks_);
  }
}

}  // namespace lumen::kv
