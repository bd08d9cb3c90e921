// Expert parallelism's bookkeeping (model/expert_partition.h), with every rank of a run
// simulated in one process: the expert and token shares, the exchange plans agreeing between
// sender and receiver, and the rows packed, exchanged, run and summed giving what one process
// computes; including ranks that receive no rows and layers whose tokens all choose one rank.
#include "model/expert_partition.h"

#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "util/error.h"

namespace lumen::model {
namespace {

// Routing of n tokens to k of n_experts distinct experts, chosen from `allowed` (all: empty).
Routing random_routing(int64_t n, int64_t k, int64_t n_experts, uint32_t seed, std::vector<int32_t> allowed = {}) {
  if (allowed.empty()) {
    allowed.resize(static_cast<size_t>(n_experts));
    std::iota(allowed.begin(), allowed.end(), 0);
  }
  std::mt19937 rng(seed);
  Routing r;
  for (int64_t t = 0; t < n; ++t) {
    std::shuffle(allowed.begin(), allowed.end(), rng);
    for (int64_t s = 0; s < k; ++s) {
      r.experts.push_back(allowed[static_cast<size_t>(s)]);
      r.weights.push_back(std::uniform_real_distribution<float>(0.05f, 1.0f)(rng));
    }
  }
  return r;
}

TEST(ExpertPartition, SplitsExpertsEquallyAndRefusesWhatDoesNotDivide) {
  EXPECT_EQ(expert_range(8, 0, 2).first, 0);
  EXPECT_EQ(expert_range(8, 1, 2).first, 4);
  EXPECT_EQ(expert_range(8, 1, 2).count, 4);
  EXPECT_EQ(expert_range(60, 3, 4).first, 45);
  EXPECT_EQ(expert_owner(44, 60, 4), 2);
  EXPECT_EQ(expert_owner(45, 60, 4), 3);
  EXPECT_THROW(expert_range(60, 0, 7), Error);
  EXPECT_THROW(expert_range(8, 2, 2), Error);
  HParams hp;
  hp.architecture = "llama";
  EXPECT_THROW(check_expert_parallel(hp, 2), Error);  // no experts: a dense model
  hp.expert_count = 60;
  EXPECT_NO_THROW(check_expert_parallel(hp, 4));
  try {
    check_expert_parallel(hp, 7);
    FAIL() << "7 does not divide 60";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not divide the model's 60 experts"), std::string::npos) << e.what();
  }
}

TEST(ExpertPartition, TokensShareInRankOrderAndARankMayHaveNone) {
  EXPECT_EQ(token_range(1, 0, 2).count, 0);  // decode of one token: rank 1 speaks for it
  EXPECT_EQ(token_range(1, 1, 2).count, 1);
  int64_t next = 0;
  for (int r = 0; r < 3; ++r) {
    const TokenRange t = token_range(10, r, 3);
    EXPECT_EQ(t.first, next);
    next += t.count;
  }
  EXPECT_EQ(next, 10);
}

// Every rank's plan from the same routing; what r sends q is what q expects from r, entry for
// entry, and each entry goes once, to its expert's rank.
void expect_plans_agree(const Routing& routing, int64_t k, int64_t n_experts, int size) {
  std::vector<ExpertExchange> plans(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) plan_expert_exchange(routing, k, n_experts, r, size, plans[static_cast<size_t>(r)]);
  size_t total = 0;
  for (int q = 0; q < size; ++q) {
    const ExpertExchange& receiver = plans[static_cast<size_t>(q)];
    size_t at = 0;
    for (int r = 0; r < size; ++r) {
      const ExpertExchange& sender = plans[static_cast<size_t>(r)];
      size_t offset = 0;
      for (int p = 0; p < q; ++p) offset += sender.sent_rows[static_cast<size_t>(p)];
      ASSERT_EQ(sender.sent_rows[static_cast<size_t>(q)], receiver.received_rows[static_cast<size_t>(r)]);
      for (size_t i = 0; i < receiver.received_rows[static_cast<size_t>(r)]; ++i) {
        const int32_t entry = sender.sent[offset + i];
        ASSERT_EQ(entry, receiver.received[at + i]);
        ASSERT_EQ(expert_owner(routing.experts[static_cast<size_t>(entry)], n_experts, size), q);
      }
      at += receiver.received_rows[static_cast<size_t>(r)];
    }
    total += receiver.received.size();
  }
  EXPECT_EQ(total, routing.experts.size());
}

TEST(ExpertPartition, SendersAndReceiversAgreeOnEveryEntry) {
  for (const int size : {1, 2, 3, 4}) {
    SCOPED_TRACE(size);
    expect_plans_agree(random_routing(37, 2, 12, 5), 2, 12, size);
    expect_plans_agree(random_routing(1, 2, 12, 6), 2, 12, size);  // most ranks speak for no token
  }
}

TEST(ExpertPartition, ALayerWhoseTokensAllChooseOneRankLeavesTheOthersNothingToRun) {
  // 8 experts over 2 ranks; every token picks 2 of rank 1's experts 4..7.
  const Routing routing = random_routing(9, 2, 8, 3, {4, 5, 6, 7});
  expect_plans_agree(routing, 2, 8, 2);
  ExpertExchange rank0, rank1;
  plan_expert_exchange(routing, 2, 8, 0, 2, rank0);
  plan_expert_exchange(routing, 2, 8, 1, 2, rank1);
  EXPECT_TRUE(rank0.received.empty());
  EXPECT_EQ(rank0.received_rows, (std::vector<size_t>{0, 0}));
  EXPECT_EQ(rank0.sent_rows, (std::vector<size_t>{0, 8}));  // its 4 tokens, 2 entries each, all to rank 1
  EXPECT_EQ(rank1.received.size(), 18u);
}

// The whole exchange simulated: rows packed by gather_entry_rows, an all-to-all done by hand
// from the segment sizes, a stand-in expert (row times (expert + 1) times the weight), results
// sent back, and each token's sum in slot order; against the same sums taken in one place.
TEST(ExpertPartition, PackedRowsComeBackAsOneProcessSumsThem) {
  const int64_t cols = 5, k = 2, n_experts = 8;
  for (const bool one_rank_only : {false, true}) {
    for (const int64_t n : {int64_t{1}, int64_t{2}, int64_t{11}}) {
      SCOPED_TRACE(n);
      const int size = 2;
      const Routing routing =
          one_rank_only ? random_routing(n, k, n_experts, 9, {0, 1, 2, 3}) : random_routing(n, k, n_experts, 9);
      std::vector<float> rows(static_cast<size_t>(n * cols));
      std::mt19937 rng(4);
      for (float& v : rows) v = std::uniform_real_distribution<float>(-1, 1)(rng);
      const auto expert = [&](int32_t entry, const float* row, float* out) {
        const float w = routing.weights[static_cast<size_t>(entry)];
        const float m = static_cast<float>(routing.experts[static_cast<size_t>(entry)] + 1);
        for (int64_t c = 0; c < cols; ++c) out[c] = row[c] * m * w;
      };
      std::vector<ExpertExchange> plans(size);
      std::vector<std::vector<float>> sent(size), received(size), results(size), returned(size);
      for (int r = 0; r < size; ++r) {
        plan_expert_exchange(routing, k, n_experts, r, size, plans[r]);
        sent[r].resize(plans[r].sent.size() * cols);
        gather_entry_rows(rows.data(), cols, plans[r].sent, k, sent[r].data());
        EXPECT_EQ(segment_bytes(plans[r].sent_rows, cols * sizeof(float)).size(), 2u);
      }
      // Out: q's receive buffer is r = 0, 1's segments for q, in rank order.
      for (int q = 0; q < size; ++q) {
        for (int r = 0; r < size; ++r) {
          size_t offset = 0;
          for (int p = 0; p < q; ++p) offset += plans[r].sent_rows[p];
          received[q].insert(received[q].end(), sent[r].begin() + static_cast<int64_t>(offset * cols),
                             sent[r].begin() + static_cast<int64_t>((offset + plans[r].sent_rows[q]) * cols));
        }
        ASSERT_EQ(received[q].size(), plans[q].received.size() * cols);
        results[q].resize(received[q].size());
        for (size_t i = 0; i < plans[q].received.size(); ++i) {
          expert(plans[q].received[i], received[q].data() + i * cols, results[q].data() + i * cols);
        }
      }
      // Back: r's receive buffer is q = 0, 1's segments for r.
      for (int r = 0; r < size; ++r) {
        for (int q = 0; q < size; ++q) {
          size_t offset = 0;
          for (int p = 0; p < r; ++p) offset += plans[q].received_rows[p];
          returned[r].insert(returned[r].end(), results[q].begin() + static_cast<int64_t>(offset * cols),
                             results[q].begin() + static_cast<int64_t>((offset + plans[q].received_rows[r]) * cols));
        }
        ASSERT_EQ(returned[r].size(), plans[r].sent.size() * cols);
        const TokenRange own = token_range(n, r, size);
        for (int64_t t = own.first; t < own.first + own.count; ++t) {
          std::vector<float> got(cols, 0.0f), want(cols, 0.0f), one(cols);
          for (int64_t s = 0; s < k; ++s) {
            const auto entry = static_cast<int32_t>(t * k + s);
            const auto p = std::find(plans[r].sent.begin(), plans[r].sent.end(), entry) - plans[r].sent.begin();
            expert(entry, rows.data() + t * cols, one.data());
            for (int64_t c = 0; c < cols; ++c) {
              got[c] += returned[r][static_cast<size_t>(p * cols + c)];
              want[c] += one[c];
            }
          }
          EXPECT_EQ(got, want) << "token " << t;
        }
      }
      if (one_rank_only) {
        EXPECT_TRUE(plans[1].received.empty());
      }
    }
  }
}

}  // namespace
}  // namespace lumen::model
