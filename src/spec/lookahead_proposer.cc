#include "spec/lookahead_proposer.h"

#include <algorithm>

#include "spec/token_tree.h"

namespace lumen::spec {

namespace {

// splitmix64: a cheap, well-mixed pseudo-random sequence for the window's first picks.
uint64_t mix(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

}  // namespace

void LookaheadProposer::fill_window(Sequence& s, uint64_t sequence_id, std::span<const int32_t> tokens) const {
  uint64_t state = sequence_id;
  s.levels.assign(static_cast<size_t>(shape_.ngram - 1), std::vector<int32_t>(static_cast<size_t>(shape_.window)));
  for (auto& level : s.levels) {
    for (int32_t& token : level) token = tokens[mix(state) % tokens.size()];
  }
  s.iterations = 0;
}

void LookaheadProposer::window_rows(const Sequence& s, ExtraRows& rows) const {
  rows.clear();
  const int32_t w = shape_.window;
  // Row of level j, column i (level 0 has no row for column 0: t is there).
  auto index = [w](int32_t j, int32_t i) { return j == 0 ? i - 1 : (w - 1) + (j - 1) * w + i; };
  for (int32_t j = 0; j < shape_.ngram - 1; ++j) {
    for (int32_t i = j == 0 ? 1 : 0; i < w; ++i) {
      rows.tokens.push_back(s.levels[static_cast<size_t>(j)][static_cast<size_t>(i)]);
      rows.depth.push_back(i + j);
      // Level 0 chains along its columns; above it, each row extends the one below it.
      const bool below_is_t = j == 0 ? i == 1 : (j == 1 && i == 0);
      rows.parent.push_back(below_is_t ? -1 : (j == 0 ? index(0, i - 1) : index(j - 1, i)));
    }
  }
  rows.n_logits = w;  // the top level's
}

void LookaheadProposer::propose(std::span<const DraftRequest> requests) {
  for (const DraftRequest& r : requests) {
    r.draft->clear();
    if (r.extra != nullptr) r.extra->clear();
    if (r.tokens.empty() || r.max_tokens <= 0) continue;
    auto [it, added] = sequences_.try_emplace(r.sequence_id, shape_);
    Sequence& s = it->second;
    if (added) fill_window(s, r.sequence_id, r.tokens);
    s.last_token = r.tokens.back();
    const std::vector<std::span<const int32_t>> found = s.pool.find(s.last_token);
    if (r.draft_parents != nullptr) r.draft_parents->clear();
    if (r.draft_parents != nullptr && r.max_candidates > 1) {
      // Token tree: the most recent n-grams for t, up to max_candidates, merged.
      const int64_t max_nodes = static_cast<int64_t>(r.max_tokens) * r.max_candidates;
      for (size_t k = 0; k < found.size() && k < static_cast<size_t>(r.max_candidates); ++k) {
        const std::span<const int32_t> tail = found[k].first(std::min<size_t>(found[k].size(), static_cast<size_t>(r.max_tokens)));
        add_branch(*r.draft, *r.draft_parents, tail, max_nodes);
      }
    } else if (!found.empty()) {
      const std::span<const int32_t> tail = found.front();
      r.draft->assign(tail.begin(), tail.begin() + std::min<std::ptrdiff_t>(std::ssize(tail), r.max_tokens));
    }
    if (r.extra != nullptr) {
      window_rows(s, *r.extra);
      s.awaiting = true;
    }
  }
}

void LookaheadProposer::observe(uint64_t sequence_id, std::span<const int32_t> outputs) {
  const auto it = sequences_.find(sequence_id);
  if (it == sequences_.end() || !it->second.awaiting || std::ssize(outputs) != shape_.window) return;
  Sequence& s = it->second;
  s.awaiting = false;
  const auto levels = static_cast<size_t>(shape_.ngram - 1);
  // Once every level above level 0 holds the model's own guesses, each column and the new top
  // token form an n-gram.
  if (s.iterations >= shape_.ngram - 2) {
    std::vector<int32_t> tail(levels);
    for (size_t i = 0; i < outputs.size(); ++i) {
      for (size_t j = 1; j < levels; ++j) tail[j - 1] = s.levels[j][i];
      tail[levels - 1] = outputs[i];
      s.pool.add(i == 0 ? s.last_token : s.levels[0][i], tail);
    }
  }
  // One Jacobi iteration: every column drops its oldest guess and takes the new one on top.
  std::rotate(s.levels.begin(), s.levels.begin() + 1, s.levels.end());
  s.levels.back().assign(outputs.begin(), outputs.end());
  ++s.iterations;
}

void LookaheadProposer::forget_ended(const std::function<bool(uint64_t)>& live) {
  std::erase_if(sequences_, [&live](const auto& entry) { return !live(entry.first); });
}

const NgramPool* LookaheadProposer::pool(uint64_t sequence_id) const {
  const auto it = sequences_.find(sequence_id);
  return it == sequences_.end() ? nullptr : &it->second.pool;
}

}  // namespace lumen::spec
