#include "spec/token_tree.h"

namespace lumen::spec {

int64_t add_branch(std::vector<int32_t>& tokens, std::vector<int32_t>& parents, std::span<const int32_t> branch,
                   int64_t max_nodes) {
  int32_t at = -1;
  int64_t added = 0;
  for (const int32_t token : branch) {
    int32_t child = -1;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (parents[i] == at && tokens[i] == token) {
        child = static_cast<int32_t>(i);
        break;
      }
    }
    if (child < 0) {
      if (static_cast<int64_t>(tokens.size()) >= max_nodes) break;
      tokens.push_back(token);
      parents.push_back(at);
      child = static_cast<int32_t>(tokens.size() - 1);
      ++added;
    }
    at = child;
  }
  return added;
}

std::vector<int32_t> node_depths(std::span<const int32_t> parents) {
  std::vector<int32_t> depth(parents.size());
  for (size_t i = 0; i < parents.size(); ++i) {
    depth[i] = parents[i] < 0 ? 1 : depth[static_cast<size_t>(parents[i])] + 1;
  }
  return depth;
}

}  // namespace lumen::spec
