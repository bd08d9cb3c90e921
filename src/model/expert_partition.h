#pragma once
// Expert parallelism (issue 53): rank r of N holds a contiguous range of every MoE layer's routed
// experts (N must divide their count); attention, the router, the shared expert and all other
// weights are whole on every rank, and every rank runs the same batch. Each rank routes every
// token (the same router on the same rows gives the same choice everywhere), so every rank
// knows, without asking, who sends what to whom:
//  - rank r speaks for a contiguous share of the batch's tokens (its "own" tokens);
//  - dispatch: each routed (token, slot) entry of an own token whose expert lives on rank q sends
//    the token's hidden row to q (one row per entry), in (token, slot) order;
//  - q runs its experts over the rows it received and sends each weighted result back;
//  - r sums each own token's results in slot order (the shared expert last), as one process does,
//    and every rank gathers every rank's sums, so the next layer's input is whole everywhere.
// This file is the plain bookkeeping: which experts and tokens are whose, and the exchange plan.
#include <cstdint>
#include <span>
#include <vector>

#include "model/hparams.h"
#include "model/moe_router.h"

namespace lumen::model {

// Throws lumen::Error, saying why, when a model cannot share its experts among `size` processes:
// it has no routed experts, or size does not divide their count. Cheap: the hyperparameters
// only, so a command refuses before any weight is read.
void check_expert_parallel(const HParams& hp, int size);

// [first, first + count): the experts of rank `rank` of `size`. Throws lumen::Error when size
// does not divide n_experts.
struct ExpertRange {
  int64_t first = 0;
  int64_t count = 0;
  bool holds(int64_t expert) const { return expert >= first && expert < first + count; }
};
ExpertRange expert_range(int64_t n_experts, int rank, int size);

// The rank that holds `expert` (size divides n_experts).
int expert_owner(int64_t expert, int64_t n_experts, int size);

// [first, first + count): the tokens of a batch of n_tokens that rank `rank` of `size` speaks
// for, near-equal contiguous shares in rank order (a rank may have none: one token, two ranks).
struct TokenRange {
  int64_t first = 0;
  int64_t count = 0;
};
TokenRange token_range(int64_t n_tokens, int rank, int size);

// One MoE layer's all-to-all, the same on every rank from the same routing. An entry is
// token * n_used + slot, an index into Routing's arrays.
struct ExpertExchange {
  // This rank's own tokens' entries, grouped by the rank holding their expert (rank order), in
  // entry order within each: the rows it sends, and later the results it receives, in this order.
  std::vector<int32_t> sent;
  std::vector<size_t> sent_rows;  // per rank
  // The entries routed to this rank's experts, grouped by the rank that owns their token, in
  // entry order within each: the rows it receives and the results it sends back.
  std::vector<int32_t> received;
  std::vector<size_t> received_rows;  // per rank
};
void plan_expert_exchange(const Routing& routing, int64_t n_used, int64_t n_experts, int rank, int size,
                          ExpertExchange& out);

// Copies the hidden row of each entry's token (row = entry / n_used, `cols` floats a row) into
// `out`, one after another.
void gather_entry_rows(const float* rows, int64_t cols, std::span<const int32_t> entries, int64_t n_used, float* out);

// Each row count times `row_bytes`: an all-to-all's segment sizes.
std::vector<size_t> segment_bytes(std::span<const size_t> rows, size_t row_bytes);

}  // namespace lumen::model
