#pragma once
// A random token tree for the attention tests (CUDA's against the CPU's, and the host plan's):
// n rows under a sequence whose cached keys end at start_pos. Row i's parent is a random earlier
// row, or none (a child of the last committed token) one time in four; it sees its ancestors and
// itself (SequenceSlice::visible, n x n flags), and its position is start_pos plus its depth
// (SequenceSlice::positions).
#include <cstdint>
#include <random>
#include <vector>

namespace lumen::testing {

struct RandomTokenTree {
  std::vector<uint8_t> visible;
  std::vector<int32_t> positions;
};

inline RandomTokenTree random_token_tree(int64_t n, int64_t start_pos, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> parent(static_cast<size_t>(n), -1), depth(static_cast<size_t>(n), 0);
  RandomTokenTree tree;
  tree.visible.assign(static_cast<size_t>(n * n), 0);
  for (int64_t i = 0; i < n; ++i) {
    if (i > 0 && rng() % 4 != 0) parent[static_cast<size_t>(i)] = static_cast<int64_t>(rng() % static_cast<uint32_t>(i));
    const int64_t p = parent[static_cast<size_t>(i)];
    depth[static_cast<size_t>(i)] = p < 0 ? 0 : depth[static_cast<size_t>(p)] + 1;
    for (int64_t a = i; a >= 0; a = parent[static_cast<size_t>(a)]) tree.visible[static_cast<size_t>(i * n + a)] = 1;
    tree.positions.push_back(static_cast<int32_t>(start_pos + depth[static_cast<size_t>(i)]));
  }
  return tree;
}

}  // namespace lumen::testing
