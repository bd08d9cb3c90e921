#pragma once
// The filters that narrow the candidate list after temperature: top-p, min-p, typical-p (top-k
// is select_top in dense_ops.h). All of them see the temperature-scaled distribution: the
// candidates' logits are s_i = (z_i - z_max) / T, the probability of candidate i among a set C
// is q_i = exp(s_i) / sum_{j in C} exp(s_j), and each filter keeps at least one candidate.
//
// Top-p and typical-p keep "the smallest prefix, in some order, whose probability reaches a
// mass". Neither sorts the list: first the 64 leading candidates are selected in one pass
// (bounded heap, blocks that cannot contribute skipped after a vectorized max), which settles a
// peaked distribution; when they do not reach the mass, a weighted quickselect (nth_element on
// halving ranges, summing the mass of each upper half) finds the prefix in O(n). Orders are
// strict total orders (ties broken by the lower id), so the kept set is exactly defined; the
// kept candidates come out in no particular order.
#include <cstddef>
#include <vector>

#include "sampling/candidate.h"

namespace lumen::sampling {

// How many leading candidates top-p and typical-p select first (see above). A list that holds
// only a row's leading candidates, and at least this many, settles top-p exactly when they do.
inline constexpr size_t kFirstPrefix = 64;

// Working memory of the filters, reused across calls.
struct FilterScratch {
  std::vector<float> keys;        // the order a filter ranks candidates by, larger first
  std::vector<float> weights;     // the candidates' unnormalized probabilities
  std::vector<Candidate> ranked;  // (position, key) pairs being selected
  std::vector<Candidate> sorted;  // for putting a list in id order
  CandidateList kept;
};

// Top-p (nucleus): order by more_likely; keep the smallest prefix whose probability reaches p.
// Probabilities are exp(s_i) / total_weight, where total_weight = sum exp(s_j) over the set the
// filter acts on. That set may hold tokens `candidates` lacks, provided every one of them is
// outside the nucleus (the sampler drops such tokens early, see Sampler).
// `leading_only`: the list holds only the set's kFirstPrefix most likely candidates (a device
// sent back a row's leading candidates, not the row); then, when those do not reach the mass,
// returns false and leaves the list unspecified, since the nucleus reaches past them. Returns
// true otherwise, the list then exactly what it would be for the whole set.
bool keep_top_p(CandidateList& candidates, float p, double total_weight, FilterScratch& scratch,
                bool leading_only = false);

// Min-p: keep candidate i when q_i >= min_p * max_j q_j, i.e. s_i - s_max >= ln(min_p).
// Keeps the candidates' relative order.
void keep_min_p(CandidateList& candidates, float min_p);

// Typical-p (Meister et al., "Locally typical sampling"): H = -sum q_j ln q_j over the
// candidates; order them by |-ln q_i - H| (closest to the entropy first, ties by lower id);
// keep the smallest prefix whose probability reaches tau. (-ln q_i - H = E_q[s] - s_i: the
// order is by distance from the mean scaled logit, computed in float.)
void keep_typical(CandidateList& candidates, float tau, FilterScratch& scratch);

}  // namespace lumen::sampling
