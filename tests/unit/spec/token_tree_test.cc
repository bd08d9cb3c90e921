// Token trees: branches merged on their shared prefixes with parents before children, and the
// n-gram proposer's candidates (its chain proposal first, then other matches) merged into one.
#include "spec/token_tree.h"

#include <gtest/gtest.h>

#include "spec/ngram_proposer.h"

namespace lumen::spec {
namespace {

using Tokens = std::vector<int32_t>;

TEST(TokenTree, BranchesShareTheirCommonPrefixes) {
  Tokens tokens, parents;
  EXPECT_EQ(add_branch(tokens, parents, Tokens{5, 6, 7}, 16), 3);
  EXPECT_EQ(add_branch(tokens, parents, Tokens{5, 6, 8}, 16), 1);
  EXPECT_EQ(add_branch(tokens, parents, Tokens{9}, 16), 1);
  EXPECT_EQ(add_branch(tokens, parents, Tokens{5, 6}, 16), 0);  // already there
  EXPECT_EQ(tokens, (Tokens{5, 6, 7, 8, 9}));
  EXPECT_EQ(parents, (Tokens{-1, 0, 1, 1, -1}));
  EXPECT_EQ(node_depths(parents), (Tokens{1, 2, 3, 3, 1}));
  // A branch that does not fit is cut at the node limit.
  EXPECT_EQ(add_branch(tokens, parents, Tokens{5, 4, 3, 2}, 7), 2);
  EXPECT_EQ(tokens, (Tokens{5, 6, 7, 8, 9, 4, 3}));
  EXPECT_EQ(parents, (Tokens{-1, 0, 1, 1, -1, 0, 5}));
}

TEST(NgramTree, TheChainProposalComesFirstThenOtherMatches) {
  // "1 2" occurs three times, followed by 3 4, 7 8 and (most recently) 3 9; "0 1 2" once.
  const Tokens seq = {0, 1, 2, 3, 4, 5, 1, 2, 7, 8, 6, 1, 2, 3, 9, 0, 1, 2};
  Tokens chain;
  ngram_lookup(seq, 2, 3, 2, chain);
  EXPECT_EQ(chain, (Tokens{3, 4}));  // the longest match, "0 1 2"
  Tokens tokens, parents;
  ngram_tree(seq, 2, 3, 2, 3, tokens, parents);
  // First branch: the chain's; then the two-token matches, most recent first ("3 9" shares 3).
  EXPECT_EQ(tokens, (Tokens{3, 4, 9, 7, 8}));
  EXPECT_EQ(parents, (Tokens{-1, 0, 0, -1, 3}));
  ngram_tree(seq, 2, 3, 2, 1, tokens, parents);  // one candidate: the chain itself
  EXPECT_EQ(tokens, chain);
  // A loop: the first branch repeats past the end as the chain does.
  const Tokens loop = {9, 5, 7, 5, 7, 5, 7};
  ngram_lookup(loop, 2, 4, 5, chain);
  ngram_tree(loop, 2, 4, 5, 3, tokens, parents);
  ASSERT_GE(tokens.size(), chain.size());
  EXPECT_EQ(Tokens(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(chain.size())), chain);
  EXPECT_EQ(chain, (Tokens{5, 7, 5, 7, 5}));
  ngram_tree(Tokens{1, 2, 3}, 2, 3, 2, 3, tokens, parents);  // no match
  EXPECT_TRUE(tokens.empty());
  EXPECT_TRUE(parents.empty());
}

}  // namespace
}  // namespace lumen::spec
