// Randomized property test of SequenceKv with sliding-window groups: random steps, forks,
// preemptions (recompute through the prefix cache, or swap through a simulated host copy) and
// finishes on a small pool, checked after every operation against what each sequence's tokens
// are. The K/V is simulated: kv[block * block_size + row] records the token written there.
//
// Checked after every operation, for every live sequence and every group: each position a later
// query can see (all of them for a full group, the window's for a windowed one) reads back its
// own token through the group's table; entries below the window name the null block, which is
// never written; and the pool's bookkeeping is consistent. At the end everything is released.
#include <gtest/gtest.h>

#include <memory>
#include <random>
#include <vector>

#include "kv/sequence_kv.h"

namespace lumen::kv {
namespace {

struct SimSequence {
  explicit SimSequence(const KvSpace& space) : blocks(space, 0) {}
  SequenceKv blocks;
  std::vector<int32_t> tokens;
  int64_t n_computed = 0;
};

struct Params {
  std::vector<int64_t> layer_windows;
  int32_t n_blocks;
  int32_t block_size;
  uint64_t seed;
};

class Harness {
 public:
  explicit Harness(const Params& p)
      : layout_(make_kv_layout(p.layer_windows, true)),
        pool_(p.n_blocks, p.block_size),
        rng_(p.seed),
        kv_(static_cast<size_t>(p.n_blocks) * p.block_size, -1) {
    space_ = {&pool_, &layout_, *pool_.allocate()};
    for (int s = 0; s < 3; ++s) stems_.push_back(random_tokens(uniform(1, 4 * bs())));
  }

  void run(int n_ops) {
    for (int op = 0; op < n_ops && !::testing::Test::HasFailure(); ++op) {
      const int roll = uniform(0, 99);
      if (roll < 15) {
        create();
      } else if (roll < 70) {
        step();
      } else if (roll < 77) {
        fork();
      } else if (roll < 85) {
        preempt_recompute();
      } else if (roll < 92) {
        preempt_swap();
      } else {
        finish();
      }
      check();
    }
    seqs_.clear();
    pool_.check_consistency();
    EXPECT_EQ(pool_.n_used(), 1);  // the null block
  }

  int64_t steps = 0, adopted = 0, swaps = 0;

 private:
  int bs() const { return pool_.block_size(); }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> t(static_cast<size_t>(n));
    for (int32_t& x : t) x = uniform(0, 5);  // a small alphabet: blocks repeat
    return t;
  }

  void create() {
    if (seqs_.size() >= 6) return;
    auto seq = std::make_unique<SimSequence>(space_);
    seq->tokens = stems_[static_cast<size_t>(uniform(0, 2))];
    for (int32_t t : random_tokens(uniform(1, 3 * bs()))) seq->tokens.push_back(t);
    adopt(*seq);
    seqs_.push_back(std::move(seq));
  }

  void adopt(SimSequence& seq) {
    seq.n_computed = seq.blocks.adopt_cached_prefix(seq.tokens, std::ssize(seq.tokens) - 1);
    adopted += seq.n_computed;
  }

  // One sequence computes a chunk (or its next token, after "sampling" one).
  void step() {
    if (seqs_.empty()) return;
    SimSequence& seq = *seqs_[static_cast<size_t>(uniform(0, static_cast<int>(seqs_.size()) - 1))];
    if (seq.n_computed == std::ssize(seq.tokens)) seq.tokens.push_back(uniform(0, 5));
    const int64_t n = std::min<int64_t>(std::ssize(seq.tokens) - seq.n_computed, uniform(1, 3 * bs()));
    std::vector<BlockCopy> copies;
    if (!seq.blocks.reserve(seq.n_computed, n, copies)) return;  // the pool is full: try later
    apply(copies);
    write(seq, seq.n_computed, n);
    seq.n_computed += n;
    seq.blocks.commit(seq.tokens, seq.n_computed);
    ++steps;
  }

  void apply(const std::vector<BlockCopy>& copies) {
    for (const BlockCopy& c : copies) {
      ASSERT_NE(c.dst, space_.null_block);
      for (int r = 0; r < bs(); ++r) kv_[idx(c.dst, r)] = kv_[idx(c.src, r)];
    }
  }

  void write(const SimSequence& seq, int64_t from, int64_t n) {
    for (size_t g = 0; g < seq.blocks.n_groups(); ++g) {
      for (int64_t p = from; p < from + n; ++p) {
        const BlockId block = seq.blocks.table(g)[static_cast<size_t>(p / bs())];
        ASSERT_NE(block, space_.null_block) << "a write into the null block";
        kv_[idx(block, static_cast<int>(p % bs()))] = seq.tokens[static_cast<size_t>(p)];
      }
    }
  }

  size_t idx(BlockId block, int row) const { return static_cast<size_t>(block) * static_cast<size_t>(bs()) + static_cast<size_t>(row); }

  void fork() {
    if (seqs_.empty() || seqs_.size() >= 6) return;
    const SimSequence& parent = *seqs_[static_cast<size_t>(uniform(0, static_cast<int>(seqs_.size()) - 1))];
    auto child = std::make_unique<SimSequence>(space_);
    child->blocks = parent.blocks.fork();
    child->tokens = parent.tokens;
    child->n_computed = parent.n_computed;
    seqs_.push_back(std::move(child));
  }

  void preempt_recompute() {
    if (seqs_.empty()) return;
    SimSequence& seq = *seqs_[static_cast<size_t>(uniform(0, static_cast<int>(seqs_.size()) - 1))];
    seq.blocks.release_all();
    adopt(seq);
  }

  // Out to a host copy, every block released, then back into fresh blocks when they fit.
  void preempt_swap() {
    if (seqs_.empty()) return;
    SimSequence& seq = *seqs_[static_cast<size_t>(uniform(0, static_cast<int>(seqs_.size()) - 1))];
    if (seq.n_computed == 0) return;
    std::vector<std::vector<int32_t>> host;
    for (BlockId b : seq.blocks.held_blocks(seq.n_computed)) {
      host.emplace_back(kv_.begin() + static_cast<ptrdiff_t>(idx(b, 0)), kv_.begin() + static_cast<ptrdiff_t>(idx(b, 0) + static_cast<size_t>(bs())));
    }
    seq.blocks.release_all();
    if (seq.n_computed == std::ssize(seq.tokens)) seq.tokens.push_back(uniform(0, 5));
    std::vector<BlockCopy> copies;
    if (!seq.blocks.restore(seq.n_computed, 1, copies)) {
      adopt(seq);  // no room to come back: recompute instead
      return;
    }
    EXPECT_TRUE(copies.empty());
    const std::vector<BlockId> back = seq.blocks.held_blocks(seq.n_computed);
    ASSERT_EQ(back.size(), host.size());
    for (size_t i = 0; i < back.size(); ++i) {
      std::copy(host[i].begin(), host[i].end(), kv_.begin() + static_cast<ptrdiff_t>(idx(back[i], 0)));
    }
    write(seq, seq.n_computed, 1);
    ++seq.n_computed;
    seq.blocks.commit(seq.tokens, seq.n_computed);
    ++swaps;
  }

  void finish() {
    if (seqs_.empty()) return;
    seqs_.erase(seqs_.begin() + uniform(0, static_cast<int>(seqs_.size()) - 1));
  }

  void check() {
    pool_.check_consistency();
    for (int r = 0; r < bs(); ++r) ASSERT_EQ(kv_[idx(space_.null_block, r)], -1);
    for (const auto& seq : seqs_) {
      for (size_t g = 0; g < layout_.n_groups(); ++g) {
        const auto table = seq->blocks.table(g);
        const int64_t first = first_block_in_window(seq->n_computed, layout_.groups[g].window, bs());
        for (int64_t b = 0; b < first && b < std::ssize(table); ++b) {
          ASSERT_EQ(table[static_cast<size_t>(b)], space_.null_block) << "group " << g << " block " << b;
        }
        for (int64_t p = first * bs(); p < seq->n_computed; ++p) {
          const BlockId block = table[static_cast<size_t>(p / bs())];
          ASSERT_EQ(kv_[idx(block, static_cast<int>(p % bs()))], seq->tokens[static_cast<size_t>(p)])
              << "group " << g << " position " << p << " of " << seq->n_computed;
        }
      }
    }
  }

  KvLayout layout_;
  BlockPool pool_;
  KvSpace space_;
  std::mt19937_64 rng_;
  std::vector<int32_t> kv_;
  std::vector<std::vector<int32_t>> stems_;
  std::vector<std::unique_ptr<SimSequence>> seqs_;
};

class SequenceKvProperty : public ::testing::TestWithParam<Params> {};

TEST_P(SequenceKvProperty, RandomOperationsKeepEveryVisiblePositionIntact) {
  Harness h(GetParam());
  h.run(4000);
  std::printf("steps %lld, adopted tokens %lld, swaps %lld\n", static_cast<long long>(h.steps),
              static_cast<long long>(h.adopted), static_cast<long long>(h.swaps));
  EXPECT_GT(h.steps, 300);  // fewer in the tight pool, where most steps find it full
  EXPECT_GT(h.adopted, 0);
  EXPECT_GT(h.swaps, 0);
}

INSTANTIATE_TEST_SUITE_P(Layouts, SequenceKvProperty,
                         ::testing::Values(Params{{0, 6, 6, 6}, 40, 4, 1},       // one full, three windowed
                                           Params{{5, 0, 5, 5, 5, 0}, 64, 2, 2},  // groups of two
                                           Params{{3, 9, 0}, 30, 4, 3},           // two different windows
                                           Params{{7, 7}, 24, 4, 4},              // every layer windowed
                                           Params{{0, 4}, 12, 4, 5}));            // a tight pool
}  // namespace
}  // namespace lumen::kv
