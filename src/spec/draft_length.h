#pragma once
// How long a draft should be, from how often a sequence's draft tokens are accepted and what a
// draft token costs. A verification step that scores k draft tokens is not free on a CPU: on
// the default model with 2 threads each extra row costs 10-30% of a plain decode step (the
// layers' matmuls and attention grow with the rows, bench/spec_step_cost.cc measures it), so a
// long draft that is mostly rejected makes the step slower than the tokens it saves.
//
// The model: each draft token is accepted with probability a given that the ones before it
// were (the first rejection ends the run), so a draft of k yields 1 + a + ... + a^k tokens in
// expectation, and the step costs 1 + c k plain decode steps. The best k in [1, max_k]
// maximizes tokens per unit of time; with c = 0 (cost not known yet) or a = 1 that is max_k.
#include <cstdint>

namespace lumen::spec {

double expected_tokens(double acceptance, int32_t k);
int32_t best_draft_length(double acceptance, double cost_per_draft_token, int32_t max_k);

}  // namespace lumen::spec
