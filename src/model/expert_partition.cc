#include "model/expert_partition.h"

#include <cstring>

#include "util/error.h"

namespace lumen::model {

void check_expert_parallel(const HParams& hp, int size) {
  if (size < 1) fail("expert parallel size must be at least 1 (got {})", size);
  if (hp.expert_count == 0) {
    fail("expert parallelism needs a mixture-of-experts model; {} ({}) has no routed experts",
         hp.name.empty() ? hp.architecture : hp.name, hp.architecture);
  }
  if (hp.expert_count % static_cast<uint64_t>(size) != 0) {
    fail(
        "expert parallel size {} does not divide the model's {} experts: each process must hold the same number "
        "(use a divisor of {})",
        size, hp.expert_count, hp.expert_count);
  }
}

ExpertRange expert_range(int64_t n_experts, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size) fail("expert parallelism: rank {} of {}", rank, size);
  if (n_experts <= 0 || n_experts % size != 0) {
    fail("expert parallelism: {} processes cannot share the model's {} experts equally (use a size that divides {})",
         size, n_experts, n_experts);
  }
  const int64_t per_rank = n_experts / size;
  return {rank * per_rank, per_rank};
}

int expert_owner(int64_t expert, int64_t n_experts, int size) { return static_cast<int>(expert / (n_experts / size)); }

TokenRange token_range(int64_t n_tokens, int rank, int size) {
  const int64_t first = rank * n_tokens / size;
  return {first, (rank + 1) * n_tokens / size - first};
}

void plan_expert_exchange(const Routing& routing, int64_t n_used, int64_t n_experts, int rank, int size,
                          ExpertExchange& out) {
  if (n_used <= 0 || routing.experts.size() % static_cast<size_t>(n_used) != 0) {
    fail("expert parallelism: {} routed entries are not whole tokens of {}", routing.experts.size(), n_used);
  }
  const ExpertRange mine = expert_range(n_experts, rank, size);
  const auto n_tokens = static_cast<int64_t>(routing.experts.size()) / n_used;
  out.sent.clear();
  out.received.clear();
  out.sent_rows.assign(static_cast<size_t>(size), 0);
  out.received_rows.assign(static_cast<size_t>(size), 0);
  const TokenRange own = token_range(n_tokens, rank, size);
  // Sent: one pass per destination keeps entry order within each (size is a handful).
  for (int q = 0; q < size; ++q) {
    for (int64_t i = own.first * n_used; i < (own.first + own.count) * n_used; ++i) {
      const int32_t e = routing.experts[static_cast<size_t>(i)];
      if (e < 0 || e >= n_experts) fail("expert parallelism: expert {} is not in [0, {})", e, n_experts);
      if (expert_owner(e, n_experts, size) != q) continue;
      out.sent.push_back(static_cast<int32_t>(i));
      ++out.sent_rows[static_cast<size_t>(q)];
    }
  }
  // Received: every rank's own tokens in rank order, so entry order overall.
  for (int r = 0; r < size; ++r) {
    const TokenRange theirs = token_range(n_tokens, r, size);
    for (int64_t i = theirs.first * n_used; i < (theirs.first + theirs.count) * n_used; ++i) {
      if (!mine.holds(routing.experts[static_cast<size_t>(i)])) continue;
      out.received.push_back(static_cast<int32_t>(i));
      ++out.received_rows[static_cast<size_t>(r)];
    }
  }
}

void gather_entry_rows(const float* rows, int64_t cols, std::span<const int32_t> entries, int64_t n_used, float* out) {
  const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
  for (size_t i = 0; i < entries.size(); ++i) {
    std::memcpy(out + static_cast<int64_t>(i) * cols, rows + (entries[i] / n_used) * cols, row_bytes);
  }
}

std::vector<size_t> segment_bytes(std::span<const size_t> rows, size_t row_bytes) {
  std::vector<size_t> bytes(rows.size());
  for (size_t r = 0; r < rows.size(); ++r) bytes[r] = rows[r] * row_bytes;
  return bytes;
}

}  // namespace lumen::model
