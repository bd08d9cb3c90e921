#pragma once
// What rwkv_wkv7 (RWKV 7's state update) must move and compute, for the roofline: its traffic
// in a decode step is mostly the state (head_size^2 floats per head, read and written once per
// call however many tokens), beside the six input rows and the output row per token.
#include <span>

#include "backend/backend_types.h"
#include "profile/op_cost.h"

namespace lumen::profile {

// Each sequence with rows: its state read and written; per token the six rows of heads x
// head_size values read and out written. Per token and head, 9 head_size^2 FLOPs: the sum
// against a (2 per value), the update (three products and two additions) and the sum
// against r (2 per value).
OpCost rwkv_wkv7_cost(const backend::Wkv7Rows& rows, int64_t head_size, std::span<const backend::Wkv7Sequence> seqs);

}  // namespace lumen::profile
