#pragma once
// Token-tree drafts: several candidate continuations of a sequence merged into one tree, where
// continuations that share their first tokens share those nodes. The tree is flat: node i is
// tokens[i], following node parents[i] (-1: the sequence's last token). Nodes are appended as
// branches are added, so a parent precedes its children, and the first branch added is nodes
// 0..k-1 (a chain the verifier accepts without moving K/V). Siblings hold different tokens,
// which is what keeps verification by sample-and-follow lossless (engine/draft_verification.h).
#include <cstdint>
#include <span>
#include <vector>

namespace lumen::spec {

// Adds `branch` (tokens after the last one) to the tree, sharing the nodes of its longest prefix
// already there; at most `max_nodes` nodes in all (a branch that does not fit is cut). Returns
// the nodes added.
int64_t add_branch(std::vector<int32_t>& tokens, std::vector<int32_t>& parents, std::span<const int32_t> branch,
                   int64_t max_nodes);

// The depth of every node (1 for a child of the last token).
std::vector<int32_t> node_depths(std::span<const int32_t> parents);

}  // namespace lumen::spec
