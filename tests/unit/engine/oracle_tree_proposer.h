#pragma once
// A test proposer of token trees that knows the plain output: each draft is a first branch
// spoiled at a varying place, then the right continuation as a second branch (so the accepted
// branch is often not the first, and its K/V has to move into place), then a third wrong one.
// Shared by the synthetic-model engine tests and the real-model sliding-window test.
#include <algorithm>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "spec/proposer.h"
#include "spec/token_tree.h"

namespace lumen::testing {

// `known`: the sequences (prompt, then plain output) whose continuations it proposes.
class OracleTreeProposer final : public spec::Proposer {
 public:
  explicit OracleTreeProposer(std::vector<std::vector<int32_t>> known) : known_(std::move(known)) {}

  void propose(std::span<const spec::DraftRequest> requests) override {
    for (const spec::DraftRequest& r : requests) {
      r.draft->clear();
      if (r.draft_parents == nullptr) continue;
      r.draft_parents->clear();
      for (const std::vector<int32_t>& k : known_) {
        if (k.size() <= r.tokens.size() || !std::equal(r.tokens.begin(), r.tokens.end(), k.begin())) continue;
        const size_t end = std::min(k.size(), r.tokens.size() + static_cast<size_t>(r.max_tokens));
        const std::vector<int32_t> right(k.begin() + static_cast<std::ptrdiff_t>(r.tokens.size()),
                                         k.begin() + static_cast<std::ptrdiff_t>(end));
        std::vector<int32_t> spoiled = right, other = right;
        ++proposals_;
        int32_t& s = spoiled[static_cast<size_t>(proposals_) % spoiled.size()];
        s = s == 300 ? 301 : 300;
        other[0] = other[0] == 302 ? 303 : 302;
        const int64_t max_nodes = static_cast<int64_t>(r.max_tokens) * r.max_candidates;
        spec::add_branch(*r.draft, *r.draft_parents, spoiled, max_nodes);
        spec::add_branch(*r.draft, *r.draft_parents, right, max_nodes);
        spec::add_branch(*r.draft, *r.draft_parents, other, max_nodes);
        break;
      }
    }
  }

 private:
  std::vector<std::vector<int32_t>> known_;
  int proposals_ = 0;
};

}  // namespace lumen::testing
