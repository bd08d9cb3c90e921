// The filters keep exactly the set their definitions give (computed here with full sorts in
// double precision), over random lists with ties and sizes that need the weighted quickselect.
#include "sampling/candidate_filters.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <vector>

namespace lumen::sampling {
namespace {

struct Row {
  std::vector<int32_t> ids;
  std::vector<double> s;  // scaled logits, max 0
};

// Random candidates: distinct ids in random order, logits on a grid (ties) or continuous.
Row random_row(std::mt19937_64& rng, size_t size, bool ties, double spread) {
  Row row;
  std::set<int32_t> used;
  while (row.ids.size() < size) {
    const auto id = static_cast<int32_t>(rng() % (size * 3));
    if (used.insert(id).second) row.ids.push_back(id);
  }
  std::normal_distribution<double> normal(0.0, spread);
  for (size_t i = 0; i < size; ++i) {
    const double v = normal(rng);
    row.s.push_back(ties ? std::round(v * 2.0) / 2.0 : v);
  }
  const double max = *std::max_element(row.s.begin(), row.s.end());
  for (double& v : row.s) v = static_cast<double>(static_cast<float>(v - max));
  return row;
}

CandidateList as_list(const Row& row, bool sorted_by_id) {
  CandidateList list;
  std::vector<size_t> order(row.ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (sorted_by_id)
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return row.ids[a] < row.ids[b]; });
  for (size_t i : order) list.push_back(row.ids[i], static_cast<float>(row.s[i]));
  list.in_id_order = sorted_by_id;
  return list;
}

std::set<int32_t> ids_of(const CandidateList& list) { return {list.ids.begin(), list.ids.end()}; }

// Positions of `row` in the order (key larger first, id lower first).
std::vector<size_t> ranked(const Row& row, const std::vector<double>& key) {
  std::vector<size_t> order(row.ids.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return key[a] > key[b] || (key[a] == key[b] && row.ids[a] < row.ids[b]);
  });
  return order;
}

std::set<int32_t> prefix_reaching(const Row& row, const std::vector<size_t>& order,
                                  const std::vector<double>& w, double target) {
  std::set<int32_t> kept;
  double mass = 0.0;
  for (size_t i : order) {
    kept.insert(row.ids[i]);
    mass += w[i];
    if (mass >= target) break;
  }
  return kept;
}

TEST(CandidateFilters, TopPKeepsTheSmallestMostLikelyPrefix) {
  std::mt19937_64 rng(1);
  FilterScratch scratch;
  for (int trial = 0; trial < 400; ++trial) {
    const size_t size = 1 + rng() % 1500;
    const Row row =
        random_row(rng, size, trial % 2 == 0, 0.5 + static_cast<double>(rng() % 40) / 10.0);
    const float p = 0.05f + static_cast<float>(rng() % 95) / 100.0f;
    std::vector<double> w;
    double total = 0.0;
    for (double v : row.s) total += w.emplace_back(std::exp(v));
    const std::set<int32_t> expected = prefix_reaching(row, ranked(row, row.s), w, p * total);
    CandidateList list = as_list(row, trial % 3 != 0);
    keep_top_p(list, p, total, scratch);
    ASSERT_EQ(ids_of(list), expected) << "trial " << trial << " size " << size << " p " << p;
    ASSERT_EQ(list.size(), expected.size());
  }
}

TEST(CandidateFilters, TopPWithTokensDroppedEarlyUsesTheFullTotal) {
  // The sampler drops tokens that cannot be in the nucleus before top-p runs; the kept set must
  // not change as long as the total weight is that of the full set.
  std::mt19937_64 rng(2);
  FilterScratch scratch;
  const Row row = random_row(rng, 2000, false, 1.0);
  std::vector<double> w;
  double total = 0.0;
  for (double v : row.s) total += w.emplace_back(std::exp(v));
  const float p = 0.5f;
  const std::set<int32_t> expected = prefix_reaching(row, ranked(row, row.s), w, p * total);
  Row reduced;
  for (size_t i = 0; i < row.ids.size(); ++i) {
    if (w[i] / total > (1.0 - p) / 2000.0) {
      reduced.ids.push_back(row.ids[i]);
      reduced.s.push_back(row.s[i]);
    }
  }
  ASSERT_LT(reduced.ids.size(), row.ids.size());
  CandidateList list = as_list(reduced, true);
  keep_top_p(list, p, total, scratch);
  EXPECT_EQ(ids_of(list), expected);
}

TEST(CandidateFilters, MinPKeepsThoseWithinTheRatioOfTheMostLikely) {
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    const Row row = random_row(rng, 1 + rng() % 500, trial % 2 == 0, 2.0);
    const float min_p = static_cast<float>(rng() % 100) / 100.0f;
    std::set<int32_t> expected;
    for (size_t i = 0; i < row.ids.size(); ++i) {
      if (std::exp(row.s[i]) >= min_p * 1.0) expected.insert(row.ids[i]);  // max q is exp(0)
    }
    CandidateList list = as_list(row, true);
    keep_min_p(list, min_p);
    ASSERT_EQ(ids_of(list), expected) << "trial " << trial << " min_p " << min_p;
    ASSERT_TRUE(std::is_sorted(list.ids.begin(), list.ids.end()));  // order is kept
  }
}

TEST(CandidateFilters, TypicalKeepsTheSmallestMostTypicalPrefix) {
  std::mt19937_64 rng(4);
  FilterScratch scratch;
  for (int trial = 0; trial < 300; ++trial) {
    const size_t size = 1 + rng() % 1500;
    const Row row = random_row(rng, size, false, 0.5 + static_cast<double>(rng() % 30) / 10.0);
    const float tau = 0.05f + static_cast<float>(rng() % 95) / 100.0f;
    std::vector<double> q;
    double total = 0.0;
    for (double v : row.s) total += q.emplace_back(std::exp(v));
    double entropy = 0.0;
    for (double& v : q) {
      v /= total;
      entropy -= v * std::log(v);
    }
    std::vector<double> closeness(size);  // larger = more typical
    for (size_t i = 0; i < size; ++i) closeness[i] = -std::abs(-std::log(q[i]) - entropy);
    const std::set<int32_t> expected = prefix_reaching(row, ranked(row, closeness), q, tau);
    CandidateList list = as_list(row, trial % 3 != 0);
    keep_typical(list, tau, scratch);
    ASSERT_EQ(ids_of(list), expected) << "trial " << trial << " size " << size << " tau " << tau;
  }
}

TEST(CandidateFilters, EachFilterKeepsAtLeastOne) {
  FilterScratch scratch;
  CandidateList list;
  list.push_back(7, 0.0f);
  list.push_back(3, -5.0f);
  keep_top_p(list, 1e-6f, 1.0 + std::exp(-5.0), scratch);
  EXPECT_EQ(list.ids, std::vector<int32_t>{7});
  keep_min_p(list, 1.0f);
  EXPECT_EQ(list.ids, std::vector<int32_t>{7});
  keep_typical(list, 1e-6f, scratch);
  EXPECT_EQ(list.ids, std::vector<int32_t>{7});
}

}  // namespace
}  // namespace lumen::sampling
