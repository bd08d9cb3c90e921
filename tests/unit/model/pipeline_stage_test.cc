// Pipeline parallelism's bookkeeping (model/pipeline_stage.h, model/micro_batches.h,
// kv::stage_kv_layout): which layers and neighbours each process gets, what a stage's KV cache
// keeps, and how a batch is cut into micro-batches that each read as chunked prefill would.
// tests/e2e/test_pipeline_parallel.py runs the real model through real stages.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "kv/kv_layout.h"
#include "model/kv_cache.h"
#include "model/micro_batches.h"
#include "model/pipeline_stage.h"
#include "util/error.h"

namespace lumen::model {
namespace {

TEST(StageLayers, ContiguousNearEqualWithTheRemainderOnTheLaterStages) {
  EXPECT_EQ(stage_layers(30, 2, 0).first, 0u);
  EXPECT_EQ(stage_layers(30, 2, 0).end, 15u);
  EXPECT_EQ(stage_layers(30, 2, 1).first, 15u);
  EXPECT_EQ(stage_layers(30, 2, 1).end, 30u);
  // 18 layers over 4 stages: 4, 4, 5, 5 (the first stage also embeds and computes logits).
  std::vector<uint64_t> sizes;
  uint64_t expected_first = 0;
  for (int s = 0; s < 4; ++s) {
    const LayerRange r = stage_layers(18, 4, s);
    EXPECT_EQ(r.first, expected_first);
    expected_first = r.end;
    sizes.push_back(r.end - r.first);
  }
  EXPECT_EQ(expected_first, 18u);
  EXPECT_EQ(sizes, (std::vector<uint64_t>{4, 4, 5, 5}));
  EXPECT_EQ(stage_layers(3, 3, 2).end - stage_layers(3, 3, 2).first, 1u);
  EXPECT_THROW(stage_layers(2, 3, 0), Error);  // more stages than layers
  EXPECT_THROW(stage_layers(30, 2, 2), Error);
}

TEST(PipelineStageFor, RanksGoStageByStageAndNeighboursShareATensorRank) {
  // 2 tensor ranks x 3 stages: ranks 0 1 | 2 3 | 4 5.
  const PipelineStage r0 = pipeline_stage_for(0, 2, 3, 30, 6, nullptr);
  EXPECT_EQ(r0.index, 0);
  EXPECT_EQ(r0.previous_rank, -1);
  EXPECT_EQ(r0.next_rank, 2);
  EXPECT_FALSE(r0.returns_rows);
  EXPECT_EQ(r0.returning_rank, 4);  // the last stage's tensor rank 0
  EXPECT_EQ(r0.max_micro_batches, 6);
  const PipelineStage r3 = pipeline_stage_for(3, 2, 3, 30, 6, nullptr);
  EXPECT_EQ(r3.index, 1);
  EXPECT_EQ(r3.previous_rank, 1);
  EXPECT_EQ(r3.next_rank, 5);
  EXPECT_EQ(r3.layers.first, 10u);
  EXPECT_EQ(r3.layers.end, 20u);
  const PipelineStage r4 = pipeline_stage_for(4, 2, 3, 30, 6, nullptr);
  const PipelineStage r5 = pipeline_stage_for(5, 2, 3, 30, 6, nullptr);
  EXPECT_EQ(r4.next_rank, -1);
  EXPECT_TRUE(r4.returns_rows);
  EXPECT_FALSE(r5.returns_rows);  // tensor rank 1's copy of the rows stays
  EXPECT_EQ(r5.returning_rank, -1);
  EXPECT_THROW(pipeline_stage_for(6, 2, 3, 30, 6, nullptr), Error);
  EXPECT_THROW(pipeline_stage_for(0, 2, 3, 30, 0, nullptr), Error);
}

TEST(StageKvLayout, KeepsEveryGroupWithOnlyTheStagesLayersInSlotsFromZero) {
  // Gemma 3 270M's windows: layers 5, 11, 17 global, the others a 512-token window.
  std::vector<int64_t> windows(18, 512);
  for (int global : {5, 11, 17}) windows[static_cast<size_t>(global)] = 0;
  const kv::KvLayout whole = kv::make_kv_layout(windows, true);
  ASSERT_EQ(whole.group_size, 3);
  ASSERT_EQ(whole.n_groups(), 6u);
  const kv::KvLayout first = kv::stage_kv_layout(whole, 0, 9), second = kv::stage_kv_layout(whole, 9, 18);
  for (const kv::KvLayout* stage : {&first, &second}) {
    // The same groups and windows: one page table serves every stage.
    ASSERT_EQ(stage->n_groups(), whole.n_groups());
    for (size_t g = 0; g < whole.n_groups(); ++g) EXPECT_EQ(stage->groups[g].window, whole.groups[g].window);
    EXPECT_EQ(stage->pages_for(1000, 16, 512), whole.pages_for(1000, 16, 512));
    EXPECT_EQ(stage->n_layers_held(), 9);
  }
  EXPECT_EQ(first.groups[0].layers, (std::vector<int>{5}));
  EXPECT_EQ(second.groups[0].layers, (std::vector<int>{11, 17}));
  EXPECT_EQ(second.slot_of_layer[17], 1);
  EXPECT_EQ(first.slot_of_layer[9], -1);
  EXPECT_EQ(second.slot_of_layer[8], -1);
  // Without windows: one group, each stage's page as wide as its own layers.
  const kv::KvLayout flat = kv::stage_kv_layout(kv::make_kv_layout(std::vector<int64_t>(30, 0), true), 15, 30);
  EXPECT_EQ(flat.group_size, 15);
  EXPECT_EQ(flat.slot_of_layer[15], 0);
  EXPECT_EQ(flat.slot_of_layer[29], 14);
  EXPECT_THROW(kv::stage_kv_layout(whole, 9, 9), Error);
  EXPECT_THROW(kv::stage_kv_layout(whole, 0, 19), Error);
}

TEST(StageKvLayout, AStagesCacheHoldsItsLayersOnlyAndRefusesTheOthers) {
  backend::CpuBackend cpu(1);
  HParams hp;
  hp.block_count = 4;
  hp.head_count = 2;
  hp.head_count_kv = 2;
  hp.head_dim = 32;
  hp.embedding_length = 64;
  const kv::KvLayout whole = kv::make_kv_layout(std::vector<int64_t>(4, 0), true);
  KvCache all(cpu, hp, whole, 8, 16), half(cpu, hp, kv::stage_kv_layout(whole, 2, 4), 8, 16);
  EXPECT_EQ(half.bytes() * 2, all.bytes());
  EXPECT_NO_THROW(half.layer(2));
  EXPECT_NO_THROW(half.layer(3));
  EXPECT_THROW(half.layer(1), Error);
  EXPECT_THROW(half.layer(4), Error);
}

// A batch of sequences of the given lengths (one layer group unless said), each at position
// 100 onwards, every last row wanting logits.
struct Batch {
  std::vector<int32_t> tokens, positions, logit_rows;
  std::vector<backend::SequenceSlice> slices;
  std::vector<int32_t> table = std::vector<int32_t>(64);
  std::vector<uint8_t> mask;
  ForwardBatch batch;

  Batch(const std::vector<int64_t>& lengths, size_t groups = 1, int masked = -1) {
    std::iota(table.begin(), table.end(), 0);
    int64_t row = 0;
    for (int64_t n : lengths) {
      for (int64_t i = 0; i < n; ++i) {
        tokens.push_back(static_cast<int32_t>(row + i));
        positions.push_back(static_cast<int32_t>(100 + i));
      }
      row += n;
      logit_rows.push_back(static_cast<int32_t>(row - 1));
    }
    if (masked >= 0) mask.assign(static_cast<size_t>(lengths[static_cast<size_t>(masked)] * lengths[static_cast<size_t>(masked)]), 1);
    for (size_t g = 0; g < groups; ++g) {
      row = 0;
      for (size_t s = 0; s < lengths.size(); ++s) {
        backend::SequenceSlice slice{row, lengths[s], 100, std::span<const int32_t>(table).subspan(g, 32)};
        if (static_cast<int>(s) == masked) slice.visible = mask;
        slices.push_back(slice);
        row += lengths[s];
      }
    }
    batch = {tokens, positions, slices, logit_rows};
  }
};

TEST(MicroBatches, NearEqualPartsOfAtLeastTheMinimumRows) {
  const Batch b({300});
  const std::vector<MicroBatch> parts = plan_micro_batches(b.batch, 1, 4, 64);
  ASSERT_EQ(parts.size(), 4u);
  int64_t next = 0;
  for (const MicroBatch& p : parts) {
    EXPECT_EQ(p.first_row, next);
    EXPECT_GE(p.n_rows, 74);
    next += p.n_rows;
  }
  EXPECT_EQ(next, 300);
  EXPECT_EQ(parts.back().outputs, (std::vector<size_t>{0}));
  EXPECT_TRUE(parts.front().outputs.empty());
  // Fewer rows than two parts' minimum: one part (a decode step reads its weights once).
  EXPECT_EQ(plan_micro_batches(Batch({40, 40}).batch, 1, 4, 64).size(), 1u);
  EXPECT_EQ(plan_micro_batches(Batch({130}).batch, 1, 4, 64).size(), 2u);
  EXPECT_EQ(plan_micro_batches(Batch({300}).batch, 1, 1, 64).size(), 1u);
}

TEST(MicroBatches, AMaskedSequenceIsNeverCut) {
  // Rows 0..99, then a masked token tree of rows 100..199, then 100 more: the cut at 150 moves
  // to the tree's end.
  const Batch b({100, 100, 100}, 1, 1);
  const std::vector<MicroBatch> parts = plan_micro_batches(b.batch, 1, 2, 64);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].n_rows, 200);
  EXPECT_EQ(parts[1].first_row, 200);
  EXPECT_EQ(parts[0].outputs, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(parts[1].outputs, (std::vector<size_t>{2}));
  MicroBatchInput in;
  EXPECT_THROW(slice_micro_batch(b.batch, 1, {150, 150, {}}, in), Error);
}

TEST(MicroBatches, ASequenceCutInTwoReadsAsTwoChunksOfChunkedPrefill) {
  // Two layer groups (each its own block table), sequences of 50 and 250 rows, cut in 3 parts
  // of 100: the second sequence's pieces start where the previous ends, at its later positions.
  const Batch b({50, 250}, 2);
  const std::vector<MicroBatch> parts = plan_micro_batches(b.batch, 2, 3, 64);
  ASSERT_EQ(parts.size(), 3u);
  MicroBatchInput in;
  slice_micro_batch(b.batch, 2, parts[0], in);
  ASSERT_EQ(in.sequences.size(), 4u);  // two sequences in each of two groups
  EXPECT_EQ(in.sequences[1].first_token, 50);
  EXPECT_EQ(in.sequences[1].n_tokens, 50);
  EXPECT_EQ(in.sequences[1].start_pos, 100);
  EXPECT_EQ(in.batch.logit_rows.size(), 1u);
  EXPECT_EQ(in.batch.logit_rows[0], 49);
  slice_micro_batch(b.batch, 2, parts[1], in);
  ASSERT_EQ(in.sequences.size(), 2u);  // the second sequence alone, once per group
  for (const backend::SequenceSlice& s : in.sequences) {
    EXPECT_EQ(s.first_token, 0);
    EXPECT_EQ(s.n_tokens, 100);
    EXPECT_EQ(s.start_pos, 150);  // position 100 + the 50 rows of it the first part ran
  }
  EXPECT_EQ(in.sequences[1].block_table.data(), b.slices[3].block_table.data());  // group 1's table
  EXPECT_EQ(in.batch.tokens.front(), 100);
  EXPECT_EQ(in.batch.positions.front(), 150);
  EXPECT_TRUE(in.batch.logit_rows.empty());
  slice_micro_batch(b.batch, 2, parts[2], in);
  EXPECT_EQ(in.sequences[0].start_pos, 250);
  EXPECT_EQ(in.logit_rows, (std::vector<int32_t>{99}));
  EXPECT_EQ(parts[2].outputs, (std::vector<size_t>{1}));
}

}  // namespace
}  // namespace lumen::model
