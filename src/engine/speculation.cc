#include "engine/speculation.h"

#include <algorithm>

#include "spec/draft_length.h"

namespace lumen::engine {

Speculation::Speculation(const SpeculativeConfig& config, std::unique_ptr<spec::Proposer> proposer)
    : config_(config), proposer_(std::move(proposer)) {}

int64_t Speculation::draft_room(const Completion& c, int64_t max_model_len) const {
  const Sequence& seq = c.seq;
  const RequestGroup& g = *c.group;
  if (c.finish || seq.state != SequenceState::Running || !seq.decoding()) return 0;
  if (g.mode == GroupMode::Beam || !g.forked) return 0;
  const auto n_tokens = static_cast<int64_t>(seq.tokens.size());
  // Positions n_tokens - 1 .. n_tokens - 1 + draft are written: all inside the context.
  int64_t room = std::min<int64_t>(config_.num_speculative_tokens, max_model_len - n_tokens);
  // A fully accepted draft yields draft + 1 tokens.
  room = std::min(room, c.stop_condition.tokens_left() - 1);
  if (room <= 0) return 0;
  return spec::best_draft_length(seq.spec_history.token_acceptance(), step_cost_.per_draft_token(),
                                 static_cast<int32_t>(room));
}

void Speculation::propose(const std::unordered_map<uint64_t, Completion*>& live, int64_t n_running,
                          int64_t max_model_len) {
  requests_.clear();
  const bool batch_allows = config_.disable_by_batch_size == 0 || n_running <= config_.disable_by_batch_size;
  for (const auto& [id, c] : live) {
    Sequence& seq = c->seq;
    seq.draft.clear();
    if (!batch_allows || proposer_ == nullptr) continue;
    const int64_t room = draft_room(*c, max_model_len);
    // The history counts only steps the sequence could have speculated in.
    if (room == 0 || !seq.spec_history.ready()) continue;
    requests_.push_back({seq.id, seq.tokens, static_cast<int32_t>(room), &seq.draft});
  }
  if (!requests_.empty()) proposer_->propose(requests_);
  for (const spec::DraftRequest& r : requests_) {
    if (std::ssize(*r.draft) > r.max_tokens) r.draft->resize(static_cast<size_t>(r.max_tokens));
    // Structured output: tokens past the first one the grammar forbids would only be scored to
    // be rejected.
    if (!r.draft->empty()) r.draft->resize(live.at(r.sequence_id)->sampler.allowed_prefix(*r.draft));
  }
}

void Speculation::record(Sequence& seq, int64_t drafted, int64_t accepted) {
  if (drafted <= 0) return;
  ++counters_.drafts;
  counters_.draft_tokens += static_cast<uint64_t>(drafted);
  counters_.accepted_tokens += static_cast<uint64_t>(accepted);
  seq.spec_history.record(drafted, accepted, config_.min_acceptance_rate);
}

}  // namespace lumen::engine
