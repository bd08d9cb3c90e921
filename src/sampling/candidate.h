#pragma once
// Tokens still in the running, with their logits. The filters work on a short list of these
// instead of the whole vocabulary.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen::sampling {

struct Candidate {
  int32_t id;
  float logit;
};

// The order "more likely first": larger logit, and among equal logits the lower id. A strict
// total order, so every partial selection and sort gives the same result. (A function object,
// so that the standard algorithms inline it.)
inline constexpr auto more_likely = [](const Candidate& a, const Candidate& b) {
  return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
};

// Candidates as two parallel arrays, so that the passes over their logits are the same
// vectorized kernels as the passes over a whole row.
struct CandidateList {
  std::vector<int32_t> ids;
  std::vector<float> logits;
  bool in_id_order = true;  // ids ascending (ties between equal keys then go to the lower id)

  size_t size() const { return ids.size(); }
  bool empty() const { return ids.empty(); }
  void clear() {
    ids.clear();
    logits.clear();
    in_id_order = true;
  }
  void push_back(int32_t id, float logit) {
    ids.push_back(id);
    logits.push_back(logit);
  }
  void assign(const std::vector<Candidate>& candidates, bool sorted_by_id) {
    clear();
    for (const Candidate& c : candidates) push_back(c.id, c.logit);
    in_id_order = sorted_by_id;
  }
};

}  // namespace lumen::sampling
