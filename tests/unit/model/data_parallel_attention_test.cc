// Data-parallel attention's split of a step (model/data_parallel_attention.h): which rank owns a
// sequence, and each rank's batch of its own rows, checked against the step they came from.
#include "model/data_parallel_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

#include "util/error.h"

namespace lumen::model {
namespace {

TEST(DataParallelAttention, OwnerIsDeterministicInRangeAndSpreadsConsecutiveBlocks) {
  std::vector<int> per_rank(3, 0);
  for (int32_t block = 0; block < 3000; ++block) {
    const int32_t table[] = {block, block + 1};
    const int owner = sequence_owner(table, 3);
    ASSERT_GE(owner, 0);
    ASSERT_LT(owner, 3);
    EXPECT_EQ(owner, sequence_owner(table, 3));
    EXPECT_EQ(sequence_owner(table, 1), 0);
    ++per_rank[static_cast<size_t>(owner)];
  }
  for (int count : per_rank) EXPECT_NEAR(count, 1000, 100);
  // Only the first block decides: a sequence keeps its rank as its table grows.
  const int32_t short_table[] = {42}, long_table[] = {42, 7, 9};
  EXPECT_EQ(sequence_owner(short_table, 4), sequence_owner(long_table, 4));
}

// Three sequences (one prefill of 4 rows, two decodes) in two layer groups; logits for the
// prefill's last row and both decodes, in an order of their own.
struct Step {
  std::vector<int32_t> tokens{10, 11, 12, 13, 20, 30};
  std::vector<int32_t> positions{0, 1, 2, 3, 9, 5};
  std::vector<std::vector<int32_t>> tables{{100, 101}, {200}, {300}, {110, 111}, {210}, {310}};
  std::vector<backend::SequenceSlice> slices;
  std::vector<int32_t> logit_rows{5, 3, 4};

  Step() {
    const int64_t first[] = {0, 4, 5}, count[] = {4, 1, 1}, start[] = {0, 9, 5};
    for (size_t g = 0; g < 2; ++g) {
      for (size_t s = 0; s < 3; ++s) slices.push_back({first[s], count[s], start[s], tables[g * 3 + s]});
    }
  }
  ForwardBatch batch() const { return {tokens, positions, slices, logit_rows}; }
};

TEST(DataParallelAttention, RanksShareEveryRowAndLogitOnceWithRebasedSlices) {
  const Step step;
  for (int size : {1, 2, 3}) {
    std::vector<int32_t> all_tokens, all_outputs;
    for (int rank = 0; rank < size; ++rank) {
      RankRows rows;
      select_rank_rows(step.batch(), 2, rank, size, rows);
      ASSERT_EQ(rows.sequences.size() % 2, 0u);
      const size_t n_seqs = rows.sequences.size() / 2;
      int64_t next = 0;
      for (size_t s = 0; s < n_seqs; ++s) {
        const backend::SequenceSlice& mine = rows.sequences[s];
        EXPECT_EQ(sequence_owner(mine.block_table, size), rank);
        EXPECT_EQ(mine.first_token, next);  // rebased, in the step's order
        EXPECT_EQ(rows.sequences[n_seqs + s].first_token, next);  // the second group's slice too
        EXPECT_EQ(rows.sequences[n_seqs + s].n_tokens, mine.n_tokens);
        next += mine.n_tokens;
      }
      EXPECT_EQ(static_cast<int64_t>(rows.tokens.size()), next);
      ASSERT_EQ(rows.logit_rows.size(), rows.output_index.size());
      for (size_t i = 0; i < rows.logit_rows.size(); ++i) {
        // The logit row is the same token as the step's row it stands for.
        const int32_t step_row = step.logit_rows[static_cast<size_t>(rows.output_index[i])];
        EXPECT_EQ(rows.tokens[static_cast<size_t>(rows.logit_rows[i])], step.tokens[static_cast<size_t>(step_row)]);
        EXPECT_EQ(rows.positions[static_cast<size_t>(rows.logit_rows[i])],
                  step.positions[static_cast<size_t>(step_row)]);
      }
      all_tokens.insert(all_tokens.end(), rows.tokens.begin(), rows.tokens.end());
      all_outputs.insert(all_outputs.end(), rows.output_index.begin(), rows.output_index.end());
    }
    std::sort(all_tokens.begin(), all_tokens.end());
    EXPECT_EQ(all_tokens, step.tokens);
    std::sort(all_outputs.begin(), all_outputs.end());
    EXPECT_EQ(all_outputs, (std::vector<int32_t>{0, 1, 2}));
  }
}

TEST(DataParallelAttention, RefusesWhatTheSplitDoesNotCarry) {
  const Step step;
  const std::vector<float> vectors(512, 0.0f);
  const EmbeddingSpan given[] = {{0, 1, vectors.data()}};
  ForwardBatch batch = step.batch();
  batch.embeddings = given;
  RankRows rows;
  EXPECT_THROW(select_rank_rows(batch, 2, 0, 2, rows), Error);
  EXPECT_THROW(select_rank_rows(step.batch(), 4, 0, 2, rows), Error);  // 6 slices are not 4 groups
}

}  // namespace
}  // namespace lumen::model
