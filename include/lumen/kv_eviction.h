#pragma once
// Importance-based KV eviction: a sequence keeps at most `budget` of its positions' K/V, chosen
// by the attention they receive, and frees the rest in whole blocks (engine/kv_importance.h has
// how). Per engine (EngineConfig::kv_importance) and per request (SamplingParams::kv_eviction).
//  - SnapKV (Li et al. 2024): after the prompt's prefill, each prompt position is scored by the
//    attention the last `window` prompt queries give it (per KV head, summed over the query
//    heads sharing it, max-pooled over `kernel` neighbouring positions); each layer and KV head
//    keeps its top budget - window positions and the window. Generated tokens are all kept.
//  - H2O (Zhang et al. 2023): every position accumulates the attention it receives (prompt and
//    decode queries); when the sequence's blocks hold budget positions (rounded up to whole
//    blocks), each layer and KV head keeps its `recent` last positions and the highest-scored
//    others, freeing one block's worth, so a sequence never holds more than its budget's blocks.
// Kept keys keep the rotary positions they were computed at (as both papers do), and new tokens
// continue at the sequence's full length.
#include <cstdint>
#include <string>
#include <string_view>

namespace lumen {

enum class KvImportanceMethod { None, SnapKv, H2O };

struct KvImportance {
  KvImportanceMethod method = KvImportanceMethod::None;
  int64_t budget = 0;   // positions kept (tokens)
  int64_t window = 32;  // SnapKV: the observation window (the prompt's last positions)
  int64_t kernel = 7;   // SnapKV: the max-pool size (odd)
  int64_t recent = -1;  // H2O: the recent positions always kept; -1: half the budget
  bool enabled() const { return method != KvImportanceMethod::None; }
};

// The largest budget a spec may name (a request's field is bounded by it, and by the context).
inline constexpr int64_t kMaxKvImportanceBudget = int64_t{1} << 20;

// "snapkv:budget=B[,window=W,kernel=K]", "h2o:budget=B[,recent=R]" or "none". Throws
// lumen::Error naming what is wrong (unknown method or key, a missing budget, a count out of
// range). The window and recent positions must leave room below the budget.
KvImportance parse_kv_importance(std::string_view spec);
// The spec back in the form parse_kv_importance reads.
std::string format_kv_importance(const KvImportance& importance);

}  // namespace lumen
