#include "sampling/candidate_filters.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#include "sampling/dense_ops.h"
#include "sampling/fast_exp.h"

namespace lumen::sampling {

namespace {

// Puts the candidates in id order, so that positions break ties as ids do. They already are,
// unless top-k or top-p reordered them, and then there are few.
void put_in_id_order(CandidateList& c, FilterScratch& s) {
  if (c.in_id_order) return;
  s.sorted.resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) s.sorted[i] = {c.ids[i], c.logits[i]};
  std::sort(s.sorted.begin(), s.sorted.end(),
            [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  c.assign(s.sorted, true);
}

// The number of entries of `ranked`, in more_likely order (larger key first, then lower
// position), whose weight first reaches `target`: at least 1, ranked.size() when never reached.
// Reorders `ranked` so that those entries come first. Expected O(n): each step partitions the
// undecided range at its middle and keeps the half that holds the answer.
size_t weighted_select(std::vector<Candidate>& ranked, std::span<const float> weights,
                       double target) {
  auto weight = [&weights](const Candidate& c) {
    return static_cast<double>(weights[static_cast<size_t>(c.id)]);
  };
  // Invariant: the entries before `first` come first in the order and weigh less than the
  // target (so the answer is past `first`); the answer is at most `last`.
  size_t first = 0, last = ranked.size();
  double before = 0.0;
  constexpr size_t kSmall = 32;
  while (last - first > kSmall) {
    const size_t mid = first + (last - first) / 2;
    const auto at = [&ranked](size_t i) { return ranked.begin() + static_cast<std::ptrdiff_t>(i); };
    std::nth_element(at(first), at(mid), at(last), more_likely);
    double upper = 0.0;
    for (size_t i = first; i < mid; ++i) upper += weight(ranked[i]);
    if (before + upper >= target) {
      last = mid;
    } else {
      before += upper;
      first = mid;
    }
  }
  std::sort(ranked.begin() + static_cast<std::ptrdiff_t>(first),
            ranked.begin() + static_cast<std::ptrdiff_t>(last), more_likely);
  for (size_t i = first; i < last; ++i) {
    before += weight(ranked[i]);
    if (before >= target) return i + 1;
  }
  return std::max<size_t>(last, 1);
}

// Keeps the smallest prefix, in the order "larger s.keys first, then lower position", whose
// weight exp(logit - shift) reaches `target`; at least one candidate, all when the target is
// never reached. `leading_only` (keep_top_p): false, with nothing kept, when the leading
// kFirstPrefix do not reach it.
bool keep_prefix_by_key(CandidateList& c, double target, float shift, FilterScratch& s, bool leading_only) {
  // Most distributions are settled by their leading 64: one pass, mostly skipped blocks.
  select_top(s.keys, kFirstPrefix, s.ranked);
  size_t count = 0;
  double mass = 0.0;
  for (const Candidate& r : s.ranked) {
    ++count;
    mass += fast_exp(c.logits[static_cast<size_t>(r.id)] - shift);
    if (mass >= target) break;
  }
  if (mass < target && s.ranked.size() == kFirstPrefix) {
    if (leading_only) return false;
    s.weights.resize(c.size());
    exp_into(c.logits, shift, s.weights);
    s.ranked.clear();
    for (size_t i = 0; i < s.keys.size(); ++i) {
      if (s.keys[i] > -std::numeric_limits<float>::infinity())
        s.ranked.push_back({static_cast<int32_t>(i), s.keys[i]});
    }
    count = weighted_select(s.ranked, s.weights, target);
  }
  s.kept.clear();
  for (size_t k = 0; k < count; ++k) {
    const auto i = static_cast<size_t>(s.ranked[k].id);
    s.kept.push_back(c.ids[i], c.logits[i]);
  }
  s.kept.in_id_order = false;
  std::swap(c, s.kept);
  return true;
}

}  // namespace

bool keep_top_p(CandidateList& c, float p, double total_weight, FilterScratch& s, bool leading_only) {
  if (c.empty() || p >= 1.0f) return true;
  put_in_id_order(c, s);
  s.keys.assign(c.logits.begin(), c.logits.end());  // most likely first
  return keep_prefix_by_key(c, static_cast<double>(p) * total_weight, 0.0f, s, leading_only);
}

void keep_min_p(CandidateList& c, float min_p) {
  if (c.empty() || min_p <= 0.0f) return;
  const double floor =
      static_cast<double>(max_value(c.logits)) + std::log(static_cast<double>(min_p));
  size_t kept = 0;
  for (size_t i = 0; i < c.size(); ++i) {
    if (static_cast<double>(c.logits[i]) < floor) continue;
    c.ids[kept] = c.ids[i];
    c.logits[kept] = c.logits[i];
    ++kept;
  }
  c.ids.resize(kept);
  c.logits.resize(kept);
}

void keep_typical(CandidateList& c, float tau, FilterScratch& s) {
  if (c.empty() || tau >= 1.0f) return;
  put_in_id_order(c, s);
  const float shift = max_value(c.logits);
  // With w_i = exp(s_i - shift), W = sum w, q_i = w_i / W:
  //   -ln q_i - H = (ln W - (s_i - shift)) - (ln W - sum_j q_j (s_j - shift)) = mean - s_i,
  // where mean = shift + sum_j q_j (s_j - shift) is the mean scaled logit under q.
  double weighted = 0.0;
  const double total = exp_moments(c.logits, shift, weighted);
  const auto mean = static_cast<float>(static_cast<double>(shift) + weighted / total);
  s.keys.resize(c.size());
  for (size_t i = 0; i < c.size(); ++i) s.keys[i] = -std::abs(mean - c.logits[i]);  // closest first
  keep_prefix_by_key(c, static_cast<double>(tau) * total, shift, s, false);
}

}  // namespace lumen::sampling
