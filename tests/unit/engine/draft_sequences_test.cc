// A draft model's K/V bookkeeping: what it keeps after the target accepted part of a draft, what
// a new sequence adopts from its prefix cache, who gives up blocks when the pool is full, and
// who is forgotten when it ends. Bookkeeping only (a tiny cache, no forward pass): the engine
// tests (EngineModelDrafts) check the outputs the draft's K/V leads to.
#include "engine/draft_sequences.h"

#include <gtest/gtest.h>

#include <numeric>

#include "backend/cpu/cpu_backend.h"

namespace lumen::engine {
namespace {

model::HParams tiny() {
  model::HParams hp;
  hp.block_count = 1;
  hp.head_count = 1;
  hp.head_count_kv = 1;
  hp.head_dim = 4;
  hp.value_dim = 4;
  hp.embedding_length = 4;
  return hp;
}

std::vector<int32_t> iota(int32_t n, int32_t first) {
  std::vector<int32_t> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), first);
  return v;
}

// What the proposer does after its passes: the sequence's tokens and the drafted ones computed.
void computed(DraftSequences& s, DraftSequence& seq, std::span<const int32_t> tokens, std::vector<int32_t> drafted) {
  seq.computed.assign(tokens.begin(), tokens.end());
  seq.computed.insert(seq.computed.end(), drafted.begin(), drafted.end());
  s.commit(seq);
}

TEST(DraftSequences, KeepsTheAcceptedPrefixAndAdoptsCachedBlocks) {
  backend::CpuBackend backend(1);
  DraftSequences s(backend, tiny(), 16, 4);
  s.next_step();
  const std::vector<int32_t> tokens = iota(10, 1);
  DraftSequence* seq = s.prepare(1, 0, tokens, 9, 3);
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->computed.empty());
  computed(s, *seq, tokens, {100, 101, 102});
  // The target accepted 100, rejected 101 and sampled 55 instead.
  std::vector<int32_t> next = tokens;
  next.insert(next.end(), {100, 55});
  s.next_step();
  seq = s.prepare(1, 0, next, std::ssize(next) - 1, 3);
  ASSERT_NE(seq, nullptr);
  EXPECT_EQ(seq->computed, std::vector<int32_t>(next.begin(), next.end() - 1));
  // Another sequence with the same first 8 tokens (a fork) finds their two full blocks.
  DraftSequence* fork = s.prepare(2, 0, next, std::ssize(next) - 1, 3);
  ASSERT_NE(fork, nullptr);
  EXPECT_EQ(fork->computed, std::vector<int32_t>(next.begin(), next.begin() + 8));
  // Another salt does not.
  DraftSequence* other_tenant = s.prepare(3, 7, next, std::ssize(next) - 1, 3);
  ASSERT_NE(other_tenant, nullptr);
  EXPECT_TRUE(other_tenant->computed.empty());
  s.forget_ended([](uint64_t id) { return id == 2; });
  EXPECT_EQ(s.size(), 1u);
}

TEST(DraftSequences, AFullPoolEvictsSequencesNotDraftingThisStep) {
  backend::CpuBackend backend(1);
  DraftSequences s(backend, tiny(), 4, 4);  // 16 positions
  s.next_step();
  const std::vector<int32_t> a = iota(9, 1), b = iota(9, 500);
  ASSERT_NE(s.prepare(1, 0, a, 8, 2), nullptr);  // 3 blocks
  EXPECT_EQ(s.prepare(2, 0, b, 8, 2), nullptr);  // no room, and 1 drafts in this step too
  s.next_step();
  DraftSequence* second = s.prepare(2, 0, b, 8, 2);  // 1 did not draft in this step: it goes
  ASSERT_NE(second, nullptr);
  EXPECT_EQ(s.pool().n_available(), 1);
  s.clear();
  EXPECT_EQ(s.pool().n_available(), 4);
}

}  // namespace
}  // namespace lumen::engine
