// Randomized property test: thousands of random scheduler-like operations on a small pool,
// checked after every one against a reference model that knows only what each sequence's tokens
// are. The K/V cache is simulated: kv[block * block_size + row] records which token was written
// there. Copies are applied as the model runner would (in order, before the step's writes).
//
// Checked after every operation:
//  1. reading each sequence's table through the simulated KV yields its tokens for every
//     position < n_computed (catches wrong sharing, missed copy-on-write, bad prefix hits);
//  2. each block's ref_count == the number of tables (and test-held allocations) holding it;
//  3. n_available + n_used == n_blocks and the pool's lists and index are consistent;
// and, at the end, 4. after releasing everything all blocks are available.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kv/sequence_blocks.h"

namespace lumen::kv {
namespace {

struct SimSequence {
  SequenceBlocks blocks;
  std::vector<int32_t> tokens;
  int64_t n_computed = 0;
};

struct Config {
  int32_t n_blocks;
  int32_t block_size;
  bool caching;
  uint64_t seed;
};

class Harness {
 public:
  explicit Harness(Config c)
      : cfg_(c),
        pool_(c.n_blocks, c.block_size, c.caching),
        rng_(c.seed),
        kv_(static_cast<size_t>(c.n_blocks) * c.block_size, -1) {
    // A few shared stems so that prompts repeat whole blocks, as system prompts do.
    for (int s = 0; s < 3; ++s) stems_.push_back(random_tokens(uniform(1, 3 * bs())));
  }

  // Operations and their weights (out of 100).
  void run_one_random_op() {
    using Op = void (Harness::*)();
    static constexpr std::pair<int, Op> kOps[] = {
        {12, &Harness::create},  {40, &Harness::batch_step},     {5, &Harness::fork},
        {8, &Harness::truncate}, {6, &Harness::preempt_random},  {8, &Harness::finish},
        {4, &Harness::hog},      {7, &Harness::unhog},           {5, &Harness::commit_one},
        {5, &Harness::probe_cache}};
    int roll = uniform(0, 99);
    for (const auto& [weight, op] : kOps) {
      if (roll < weight) return (this->*op)();
      roll -= weight;
    }
  }

  void run(int n_ops) {
    for (int op = 0; op < n_ops; ++op) {
      run_one_random_op();
      if (::testing::Test::HasFatalFailure()) return;
      check(op);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }

  void release_everything_and_check() {
    seqs_.clear();
    for (BlockId id : hog_) pool_.release(id);
    hog_.clear();
    pool_.check_consistency();
    EXPECT_EQ(pool_.n_available(), pool_.n_blocks());
    EXPECT_EQ(pool_.n_used(), 0);
    for (BlockId id = 0; id < pool_.n_blocks(); ++id) EXPECT_EQ(pool_.ref_count(id), 0);
  }

  int probe_full_hits = 0, copies_applied = 0, reserve_refusals = 0, tokens_written = 0, adopted_tokens = 0,
      probe_checks = 0;
  const PrefixCacheCounters& counters() const { return pool_.counters(); }

 private:
  int bs() const { return cfg_.block_size; }
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  std::vector<int32_t> random_tokens(int n) {
    std::vector<int32_t> t(n);
    for (auto& x : t) x = uniform(0, 2);  // a 3-token alphabet: blocks repeat by chance too
    return t;
  }
  SimSequence& pick() { return seqs_[uniform(0, static_cast<int>(seqs_.size()) - 1)]; }
  int32_t& row(BlockId block, int64_t pos) { return kv_[static_cast<size_t>(block) * bs() + pos % bs()]; }

  void create() {
    if (seqs_.size() >= 10) return;
    std::vector<int32_t> prompt;
    if (uniform(0, 1)) prompt = stems_[uniform(0, 2)];
    const auto tail = random_tokens(uniform(0, 3 * bs()));
    prompt.insert(prompt.end(), tail.begin(), tail.end());
    const uint64_t salt = uniform(0, 4) == 0 ? 1 : 0;
    seqs_.push_back({SequenceBlocks(pool_, salt), prompt, 0});
    if (uniform(0, 4) > 0) adopt(seqs_.back());
  }

  void adopt(SimSequence& s) {
    const int64_t max_tokens = uniform(0, static_cast<int>(s.tokens.size()));
    const int64_t got = s.blocks.adopt_cached_prefix(s.tokens, max_tokens);
    ASSERT_EQ(got % bs(), 0);
    ASSERT_LE(got, max_tokens);
    ASSERT_EQ(static_cast<int64_t>(s.blocks.table().size()) * bs(), got);
    if (!cfg_.caching) {
      ASSERT_EQ(got, 0);
    }
    s.n_computed = got;
    adopted_tokens += static_cast<int>(got);
  }

  // One engine step: reserve for up to three sequences, apply every copy, then write.
  void batch_step() {
    if (seqs_.empty()) return;
    std::vector<SimSequence*> batch;
    std::vector<int64_t> chunk;
    std::vector<BlockCopy> copies;
    for (int k = uniform(1, 3); k > 0; --k) {
      SimSequence* s = &pick();
      if (std::find(batch.begin(), batch.end(), s) != batch.end()) continue;
      const int64_t n = uniform(1, 2 * bs() + 2);
      if (s->n_computed + n > std::ssize(s->tokens)) {  // generating: new tokens
        const auto more = random_tokens(static_cast<int>(s->n_computed + n - std::ssize(s->tokens)));
        s->tokens.insert(s->tokens.end(), more.begin(), more.end());
      }
      const int32_t needed = s->blocks.blocks_needed(s->n_computed, n);
      const int32_t available = pool_.n_available();
      const std::vector<BlockId> table_before(s->blocks.table().begin(), s->blocks.table().end());
      const size_t n_copies = copies.size();
      const bool ok = s->blocks.reserve(s->n_computed, n, copies);
      ASSERT_EQ(ok, needed <= available);
      if (!ok) {
        ++reserve_refusals;
        ASSERT_TRUE(std::ranges::equal(table_before, s->blocks.table()));
        ASSERT_EQ(copies.size(), n_copies);
        ASSERT_EQ(pool_.n_available(), available);
        if (uniform(0, 1)) preempt(static_cast<size_t>(s - seqs_.data()));  // as a scheduler would
        continue;
      }
      ASSERT_LE(copies.size() - n_copies, 1u);
      batch.push_back(s);
      chunk.push_back(n);
    }
    for (const BlockCopy& c : copies) {
      std::copy_n(&row(c.src, 0), bs(), &row(c.dst, 0));
      ++copies_applied;
    }
    for (size_t i = 0; i < batch.size(); ++i) {
      SimSequence& s = *batch[i];
      for (int64_t p = s.n_computed; p < s.n_computed + chunk[i]; ++p) {
        const BlockId b = s.blocks.table()[p / bs()];
        // The heart of it: nobody else can read a block this sequence writes.
        ASSERT_EQ(pool_.ref_count(b), 1) << "writing shared block " << b;
        ASSERT_FALSE(pool_.is_published(b)) << "writing published block " << b;
        row(b, p) = s.tokens[p];
      }
      tokens_written += static_cast<int>(chunk[i]);
      s.n_computed += chunk[i];
      if (uniform(0, 4) > 0) s.blocks.commit(s.tokens, s.n_computed);  // else it lags a while
    }
  }

  void commit_one() {
    if (seqs_.empty()) return;
    SimSequence& s = pick();
    s.blocks.commit(s.tokens, s.n_computed);
  }

  void fork() {
    if (seqs_.empty() || seqs_.size() >= 10) return;
    SimSequence& s = pick();
    SimSequence child{s.blocks.fork(), s.tokens, s.n_computed};
    seqs_.push_back(std::move(child));
  }

  void truncate() {
    if (seqs_.empty()) return;
    SimSequence& s = pick();
    const int64_t held = std::ssize(s.blocks.table()) * bs();
    const int64_t n = uniform(0, static_cast<int>(held));
    s.blocks.truncate(n);
    s.n_computed = std::min(s.n_computed, n);
    // Half the time the tail is regenerated differently (beam pruning), else recomputed as is.
    if (uniform(0, 1)) s.tokens.resize(static_cast<size_t>(s.n_computed));
  }

  size_t pick_index() { return seqs_.empty() ? 0 : uniform(0, static_cast<int>(seqs_.size()) - 1); }

  void preempt_random() { preempt(pick_index()); }

  // Frees a sequence's blocks; it restarts from its tokens, reusing what the cache still has.
  void preempt(size_t index) {
    if (index >= seqs_.size()) return;
    SimSequence& s = seqs_[index];
    s.blocks.release_all();
    s.n_computed = 0;
    if (uniform(0, 1)) adopt(s);
  }

  void finish() {
    if (seqs_.empty()) return;
    const size_t i = uniform(0, static_cast<int>(seqs_.size()) - 1);
    std::swap(seqs_[i], seqs_.back());
    seqs_.pop_back();  // the destructor releases its blocks
  }

  // Someone else takes raw blocks (pressure up to exhaustion) and scribbles on them: a block
  // handed out while a sequence or the cache still relies on it shows up as a wrong token.
  void hog() {
    for (int k = uniform(1, cfg_.n_blocks); k > 0; --k) {
      const bool had = pool_.n_available() > 0;
      const auto id = pool_.allocate();
      ASSERT_EQ(id.has_value(), had);
      if (!id) return;
      std::fill_n(&row(*id, 0), bs(), -7);
      hog_.push_back(*id);
    }
  }

  void unhog() {
    for (int k = uniform(0, static_cast<int>(hog_.size())); k > 0; --k) {
      const size_t i = uniform(0, static_cast<int>(hog_.size()) - 1);
      pool_.release(hog_[i]);
      hog_[i] = hog_.back();
      hog_.pop_back();
    }
  }

  // A fresh lookup of a sequence's own committed prefix. Safety: whatever it finds reads as the
  // sequence's tokens, and wherever the sequence's block is published it finds that very block
  // (one indexed block per content). Liveness: a published first block is always found.
  void probe_cache() {
    if (seqs_.empty()) return;
    const SimSequence& s = pick();
    const auto table = s.blocks.table();
    const int64_t committed = s.blocks.n_committed_blocks() * int64_t{bs()};
    SequenceBlocks probe(pool_, s.blocks.cache_salt());
    const int64_t got = probe.adopt_cached_prefix(s.tokens, committed);
    for (int64_t p = 0; p < got; ++p)
      ASSERT_EQ(row(probe.table()[p / bs()], p), s.tokens[p]) << "probe, position " << p;
    for (int64_t i = 0; i < got / bs(); ++i) {
      if (pool_.is_published(table[i])) {
        ASSERT_EQ(probe.table()[i], table[i]) << "probe, block " << i;
      }
    }
    if (committed > 0 && pool_.is_published(table[0])) {
      ASSERT_GE(got, bs());
    }
    ++probe_checks;
    probe_full_hits += got == committed;
  }

  void check(int op) {
    std::vector<int32_t> holders(cfg_.n_blocks, 0);
    for (BlockId id : hog_) ++holders[id];
    for (size_t si = 0; si < seqs_.size(); ++si) {
      const SimSequence& s = seqs_[si];
      const auto table = s.blocks.table();
      ASSERT_GE(std::ssize(table) * bs(), s.n_computed);
      ASSERT_LE(s.blocks.n_committed_blocks() * int64_t{bs()}, s.n_computed);
      for (BlockId id : table) ++holders[id];
      for (int64_t p = 0; p < s.n_computed; ++p) {
        ASSERT_EQ(row(table[p / bs()], p), s.tokens[p])
            << "op " << op << ", sequence " << si << ", position " << p;
      }
    }
    int32_t used = 0;
    for (BlockId id = 0; id < cfg_.n_blocks; ++id) {
      ASSERT_EQ(pool_.ref_count(id), holders[id]) << "op " << op << ", block " << id;
      used += holders[id] > 0;
    }
    ASSERT_EQ(pool_.n_used(), used);
    ASSERT_EQ(pool_.n_available() + pool_.n_used(), pool_.n_blocks());
    ASSERT_NO_THROW(pool_.check_consistency()) << "op " << op;
    ASSERT_LE(pool_.counters().hit_blocks, pool_.counters().queried_blocks);
    if (!cfg_.caching) {
      ASSERT_EQ(pool_.counters().queried_blocks + pool_.n_cached(), 0u);
    }
  }

  Config cfg_;
  BlockPool pool_;
  std::mt19937_64 rng_;
  std::vector<int32_t> kv_;
  std::vector<std::vector<int32_t>> stems_;
  std::vector<SimSequence> seqs_;
  std::vector<BlockId> hog_;
};

class KvProperty : public ::testing::TestWithParam<Config> {};

std::string config_name(const ::testing::TestParamInfo<Config>& param) {
  const Config& c = param.param;
  return "blocks" + std::to_string(c.n_blocks) + "_size" + std::to_string(c.block_size) +
         (c.caching ? "_cached" : "_uncached");
}

TEST_P(KvProperty, RandomOperationsKeepEverySequenceIntact) {
  uint64_t hits = 0, evictions = 0;
  int copies = 0, refusals = 0, adopted = 0, probes = 0, written = 0, full_probes = 0;
  for (uint64_t round = 0; round < 4; ++round) {
    Config c = GetParam();
    c.seed += round * 1000;
    Harness h(c);
    h.run(5000);
    if (HasFatalFailure()) return;
    h.release_everything_and_check();
    hits += h.counters().hit_blocks;
    evictions += h.counters().evictions;
    copies += h.copies_applied;
    refusals += h.reserve_refusals;
    adopted += h.adopted_tokens;
    probes += h.probe_checks;
    written += h.tokens_written;
    full_probes += h.probe_full_hits;
  }
  // The run must actually have exercised the interesting paths.
  if (GetParam().block_size > 1) {
    EXPECT_GT(copies, 0);  // blocks of 1 are never partial
  }
  EXPECT_GT(refusals, 0);
  std::printf(
      "hits %llu, evictions %llu, copies %d, refusals %d, adopted %d, probes %d (%d whole), written %d\n",
      (unsigned long long)hits, (unsigned long long)evictions, copies, refusals, adopted, probes, full_probes,
      written);
  if (GetParam().caching) {
    EXPECT_GT(hits, 0u);
    EXPECT_GT(evictions, 0u);
  }
}

INSTANTIATE_TEST_SUITE_P(Pools, KvProperty,
                         ::testing::Values(Config{16, 1, true, 1}, Config{24, 4, true, 2},
                                           Config{24, 4, false, 3}, Config{12, 3, true, 4},
                                           Config{40, 16, true, 5}, Config{64, 2, true, 6}),
                         config_name);

}  // namespace
}  // namespace lumen::kv
