#include "engine/draft_model_proposer.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "sampling/sampler.h"

namespace lumen::engine {

namespace {

// A sequence catches up at most this many tokens per pass (a long prompt over several passes),
// which bounds the draft's activation memory as the engine's token budget bounds the target's.
constexpr int64_t kCatchUpChunk = 512;

// The ids of the k largest logits, largest first, the lowest id first among equal ones (so the
// first is sampling::argmax's).
void top_tokens(std::span<const float> logits, int32_t k, std::vector<int32_t>& out) {
  out.resize(logits.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int32_t>(i);
  const auto first = [&logits](int32_t a, int32_t b) {
    const float la = logits[static_cast<size_t>(a)], lb = logits[static_cast<size_t>(b)];
    return la > lb || (la == lb && a < b);
  };
  const auto n = std::min<size_t>(static_cast<size_t>(k), out.size());
  std::partial_sort(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(n), out.end(), first);
  out.resize(n);
}

}  // namespace

DraftModelProposer::DraftModelProposer(DraftWeights weights, backend::Backend& backend, int32_t n_blocks,
                                       int32_t block_size)
    : weights_(std::move(weights)),
      model_(weights_.transformer()),
      sequences_(backend, model_.hparams(), n_blocks, block_size),
      vocab_(static_cast<int64_t>(model_.hparams().vocab_size)) {}

void DraftModelProposer::propose(std::span<const spec::DraftRequest> requests) {
  sequences_.next_step();
  work_.clear();
  for (const spec::DraftRequest& r : requests) {
    r.draft->clear();
    if (r.draft_parents != nullptr) r.draft_parents->clear();
    const auto n = static_cast<int64_t>(r.tokens.size());
    if (n == 0 || r.max_tokens <= 0) continue;
    // Its last token is computed here (its logits give the first draft token), then the first
    // max_tokens - 1 draft tokens (each one's logits give the next).
    DraftSequence* seq = sequences_.prepare(r.sequence_id, r.cache_salt, r.tokens, n - 1, r.max_tokens - 1);
    if (seq != nullptr) work_.push_back({&r, seq, -1, {}});
  }
  try {
    while (run_pass()) {
    }
  } catch (const std::exception& e) {
    // A draft is only a guess: without one the engine decodes as it would without speculation.
    // What the failed pass wrote is unknown, so all draft K/V goes and is recomputed later.
    for (const spec::DraftRequest& r : requests) r.draft->clear();
    sequences_.clear();
    if (!reported_failure_) fmt::print(stderr, "lumen: the draft model's forward pass failed ({}); no drafts this step\n", e.what());
    reported_failure_ = true;
    return;
  }
  for (Work& w : work_) {
    sequences_.commit(*w.seq);
    add_leaves(w);
  }
}

void DraftModelProposer::add_leaves(const Work& w) {
  const spec::DraftRequest& r = *w.request;
  if (r.draft_parents == nullptr || w.leaves.empty()) return;
  std::vector<int32_t>& parents = *r.draft_parents;
  parents.resize(r.draft->size());
  for (size_t i = 0; i < parents.size(); ++i) parents[i] = static_cast<int32_t>(i) - 1;  // the chain
  const int64_t max_nodes = static_cast<int64_t>(r.max_tokens) * r.max_candidates;
  for (const auto& [parent, token] : w.leaves) {
    if (std::ssize(*r.draft) >= max_nodes) break;
    r.draft->push_back(token);
    parents.push_back(parent);
  }
}

bool DraftModelProposer::run_pass() {
  tokens_.clear();
  positions_.clear();
  slices_.clear();
  logit_rows_.clear();
  for (Work& w : work_) {
    w.logit_row = -1;
    const spec::DraftRequest& r = *w.request;
    std::vector<int32_t>& draft = *r.draft;
    if (std::ssize(draft) >= r.max_tokens) continue;
    const auto n = static_cast<int64_t>(r.tokens.size());
    const auto start = static_cast<int64_t>(w.seq->computed.size());
    const auto first = static_cast<int64_t>(tokens_.size());
    int64_t count = 1;
    if (start < n) {
      // Catching up with the sequence; the chunk that reaches its last token reads logits.
      count = std::min(n - start, kCatchUpChunk);
      tokens_.insert(tokens_.end(), r.tokens.begin() + start, r.tokens.begin() + start + count);
      if (start + count == n) w.logit_row = first + count - 1;
    } else {
      // Drafting: the latest draft token in, the next one out.
      tokens_.push_back(draft.back());
      w.logit_row = first;
    }
    for (int64_t i = 0; i < count; ++i) positions_.push_back(static_cast<int32_t>(start + i));
    w.seq->computed.insert(w.seq->computed.end(), tokens_.end() - count, tokens_.end());
    slices_.push_back({first, count, start, w.seq->blocks.table(0)});
    if (w.logit_row >= 0) {
      logit_rows_.push_back(static_cast<int32_t>(w.logit_row));
      w.logit_row = std::ssize(logit_rows_) - 1;
    }
  }
  if (tokens_.empty()) return false;
  logits_.resize(logit_rows_.size() * static_cast<size_t>(vocab_));
  model::ForwardBatch batch{tokens_, positions_, slices_, logit_rows_};
  model_.forward(batch, sequences_.cache(), logits_.data());
  for (Work& w : work_) {
    if (w.logit_row < 0) continue;
    const std::span<const float> row(logits_.data() + w.logit_row * vocab_, static_cast<size_t>(vocab_));
    std::vector<int32_t>& draft = *w.request->draft;
    if (w.request->draft_parents == nullptr || w.request->max_candidates <= 1) {
      draft.push_back(sampling::argmax(row));
      continue;
    }
    // This depth's leaves follow the chain's previous token (-1: the sequence's last one).
    top_tokens(row, w.request->max_candidates, top_);
    const auto parent = static_cast<int32_t>(draft.size()) - 1;
    draft.push_back(top_.front());
    for (size_t i = 1; i < top_.size(); ++i) w.leaves.emplace_back(parent, top_[i]);
  }
  return true;
}

}  // namespace lumen::engine
