#include "engine/kv_importance.h"

#include <algorithm>
#include <numeric>

#include "engine/sequence.h"
#include "util/error.h"

namespace lumen::engine {

namespace {

// The n_top of candidates [0, n) with the highest values (ties: the earlier slot), then the
// slots [tail_from, n_slots), all in increasing order, appended to `out`.
void keep_top(std::span<const float> values, int64_t n_top, int64_t tail_from, int64_t n_slots,
              std::vector<int32_t>& order, std::vector<int32_t>& out) {
  order.resize(values.size());
  std::iota(order.begin(), order.end(), 0);
  const auto top = std::min<int64_t>(n_top, std::ssize(order));
  std::partial_sort(order.begin(), order.begin() + top, order.end(), [&](int32_t a, int32_t b) {
    const float va = values[static_cast<size_t>(a)], vb = values[static_cast<size_t>(b)];
    return va != vb ? va > vb : a < b;
  });
  std::sort(order.begin(), order.begin() + top);
  out.insert(out.end(), order.begin(), order.begin() + top);
  for (int64_t s = tail_from; s < n_slots; ++s) out.push_back(static_cast<int32_t>(s));
}

void check_selection(std::span<const float> scores, int64_t n_slots, int64_t n_lh, int64_t tail, int64_t n_keep) {
  if (n_lh <= 0 || n_slots < 0 || std::ssize(scores) < n_slots * n_lh) {
    fail("kv eviction: {} scores for {} slots of {} heads", scores.size(), n_slots, n_lh);
  }
  if (tail < 0 || tail > n_keep || n_keep > n_slots) {
    fail("kv eviction: keep {} of {} slots with the last {} always", n_keep, n_slots, tail);
  }
}

}  // namespace

int64_t first_scored_row(const KvImportanceState& state, int64_t n_computed, int64_t n, int64_t n_tokens) {
  switch (state.config.method) {
    case KvImportanceMethod::H2O: return 0;
    case KvImportanceMethod::SnapKv:
      if (state.compressed) return n;
      return std::clamp<int64_t>(n_tokens - state.config.window - n_computed, 0, n);
    case KvImportanceMethod::None: break;
  }
  return n;
}

std::optional<int64_t> eviction_due(KvImportanceState& state, int64_t n_computed, int64_t block_size) {
  const KvImportance& c = state.config;
  if (c.method == KvImportanceMethod::SnapKv) {
    if (state.compressed) return std::nullopt;
    state.compressed = true;
    if (n_computed <= c.budget) {
      state.scores.clear();
      state.scores.shrink_to_fit();
      return std::nullopt;
    }
    return c.budget;
  }
  if (c.method == KvImportanceMethod::H2O) {
    // The budget in whole blocks: full, the next token needs a block, so one block's worth goes.
    const int64_t cap = (c.budget + block_size - 1) / block_size * block_size;
    if (n_computed + 1 <= cap) return std::nullopt;
    return cap - block_size;
  }
  return std::nullopt;
}

std::vector<int32_t> select_snapkv(std::span<const float> scores, int64_t n_slots, int64_t n_lh, int64_t window,
                                   int64_t kernel, int64_t n_keep) {
  check_selection(scores, n_slots, n_lh, window, n_keep);
  const int64_t prefix = n_slots - window, half = kernel / 2;
  std::vector<int32_t> keep, order;
  keep.reserve(static_cast<size_t>(n_lh * n_keep));
  std::vector<float> raw(static_cast<size_t>(prefix)), pooled(static_cast<size_t>(prefix));
  for (int64_t lh = 0; lh < n_lh; ++lh) {
    for (int64_t s = 0; s < prefix; ++s) raw[static_cast<size_t>(s)] = scores[static_cast<size_t>(s * n_lh + lh)];
    // Max pooling keeps a position's neighbours with it: a fact spans several tokens, and the
    // window's queries often attend to only one of them (SnapKV's clustering).
    for (int64_t s = 0; s < prefix; ++s) {
      float m = raw[static_cast<size_t>(s)];
      for (int64_t t = std::max<int64_t>(0, s - half); t <= std::min(prefix - 1, s + half); ++t) {
        m = std::max(m, raw[static_cast<size_t>(t)]);
      }
      pooled[static_cast<size_t>(s)] = m;
    }
    keep_top(pooled, n_keep - window, prefix, n_slots, order, keep);
  }
  return keep;
}

std::vector<int32_t> select_h2o(std::span<const float> scores, int64_t n_slots, int64_t n_lh, int64_t recent,
                                int64_t n_keep) {
  check_selection(scores, n_slots, n_lh, recent, n_keep);
  const int64_t older = n_slots - recent;
  std::vector<int32_t> keep, order;
  keep.reserve(static_cast<size_t>(n_lh * n_keep));
  std::vector<float> values(static_cast<size_t>(older));
  for (int64_t lh = 0; lh < n_lh; ++lh) {
    for (int64_t s = 0; s < older; ++s) values[static_cast<size_t>(s)] = scores[static_cast<size_t>(s * n_lh + lh)];
    keep_top(values, n_keep - recent, older, n_slots, order, keep);
  }
  return keep;
}

void keep_recent_in_local_layers(std::span<int32_t> keep, std::span<const int64_t> layer_windows, int64_t n_kv_heads,
                                 int64_t n_slots, int64_t n_keep) {
  const auto n_lh = static_cast<int64_t>(layer_windows.size()) * n_kv_heads;
  if (n_kv_heads <= 0 || n_keep < 0 || n_keep > n_slots || std::ssize(keep) != n_lh * n_keep) {
    fail("kv eviction: {} kept slots for {} layers of {} KV heads keeping {} of {}", keep.size(), layer_windows.size(),
         n_kv_heads, n_keep, n_slots);
  }
  for (int64_t lh = 0; lh < n_lh; ++lh) {
    if (layer_windows[static_cast<size_t>(lh / n_kv_heads)] == 0) continue;
    for (int64_t j = 0; j < n_keep; ++j) {
      keep[static_cast<size_t>(lh * n_keep + j)] = static_cast<int32_t>(n_slots - n_keep + j);
    }
  }
}

void record_eviction(Sequence& seq, std::span<const int32_t> keep, int64_t n_keep, int64_t n_lh) {
  KvImportanceState& st = seq.importance;
  if (st.config.method == KvImportanceMethod::H2O) {
    std::vector<float> moved(static_cast<size_t>(n_keep * n_lh));
    for (int64_t lh = 0; lh < n_lh; ++lh) {
      for (int64_t j = 0; j < n_keep; ++j) {
        const int64_t from = keep[static_cast<size_t>(lh * n_keep + j)];
        moved[static_cast<size_t>(j * n_lh + lh)] = st.scores[static_cast<size_t>(from * n_lh + lh)];
      }
    }
    st.scores = std::move(moved);
  } else {
    st.scores.clear();
    st.scores.shrink_to_fit();
  }
  const int64_t gone = seq.n_computed - n_keep;
  const auto first = seq.tokens.begin();
  st.evicted_tokens.insert(st.evicted_tokens.end(), first, first + gone);
  seq.tokens.erase(first, first + gone);
  const int64_t prompt_gone = std::min(seq.prompt_len, gone);
  seq.prompt_len -= prompt_gone;
  seq.n_dropped_generated += gone - prompt_gone;
  seq.next_prompt_logit = seq.prompt_len - 1;
  seq.n_computed = n_keep;
  st.n_evicted += gone;
  st.n_evicted_prompt += prompt_gone;
}

void restore_evicted(Sequence& seq) {
  KvImportanceState& st = seq.importance;
  st.scores.clear();
  st.compressed = false;
  if (st.n_evicted == 0) return;
  seq.tokens.insert(seq.tokens.begin(), st.evicted_tokens.begin(), st.evicted_tokens.end());
  seq.prompt_len += st.n_evicted_prompt;
  seq.n_dropped_generated -= st.n_evicted - st.n_evicted_prompt;
  seq.next_prompt_logit = seq.prompt_len - 1;
  st.evicted_tokens.clear();
  st.n_evicted = 0;
  st.n_evicted_prompt = 0;
}

}  // namespace lumen::engine
