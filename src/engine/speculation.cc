#include "engine/speculation.h"

#include <algorithm>

#include "sampling/sampler.h"
#include "spec/draft_length.h"
#include "spec/speculative_config.h"

namespace lumen::engine {

namespace {

// Jump-forward drafts at most this long: forced text is short (a key, punctuation), and a long
// one is verified over a few steps.
constexpr int64_t kMaxForcedDraft = 16;

// Whether a sequence may carry a draft at all this step.
bool may_draft(const Completion& c) {
  const Sequence& seq = c.seq;
  const RequestGroup& g = *c.group;
  if (c.finish || seq.state != SequenceState::Running || !seq.decoding()) return false;
  return g.mode != GroupMode::Beam && g.forked;
}

}  // namespace

Speculation::Speculation(const SpeculativeConfig& config, std::unique_ptr<spec::Proposer> proposer, bool jump_forward,
                         const tokenizer::Tokenizer& tokenizer)
    : config_(config), proposer_(std::move(proposer)), jump_forward_(jump_forward), tokenizer_(tokenizer) {}

int64_t Speculation::forced_room(const Completion& c, int64_t max_model_len) {
  if (!may_draft(c)) return 0;
  const auto n_tokens = static_cast<int64_t>(c.seq.tokens.size());
  return std::max<int64_t>(0, std::min({kMaxForcedDraft, max_model_len - n_tokens, c.stop_condition.tokens_left() - 1}));
}

bool Speculation::propose_forced(Completion& c, int64_t max_model_len) const {
  if (!c.group->grammar) return false;
  const int64_t room = forced_room(c, max_model_len);
  if (room <= 0) return false;
  const std::string forced = c.sampler.forced_continuation();
  if (forced.empty()) return false;
  std::vector<int32_t>& draft = c.seq.draft;
  draft = tokenizer_.encode_continuation(forced);
  // The last token of the forced text is where the model most often disagrees: its own token
  // there usually runs on past the forced bytes into what it chooses next ('":' then ' "'
  // rather than '":'), so it is left for the model to pick.
  if (!draft.empty()) draft.pop_back();
  if (std::ssize(draft) > room) draft.resize(static_cast<size_t>(room));
  // The forced text's own tokenization can end in a token the grammar does not take (a
  // piece that reaches past the forced bytes): cut there.
  draft.resize(c.sampler.allowed_prefix(draft));
  return !draft.empty();
}

int64_t Speculation::draft_room(const Completion& c, int64_t max_model_len) const {
  const Sequence& seq = c.seq;
  if (!may_draft(c)) return 0;
  const auto n_tokens = static_cast<int64_t>(seq.tokens.size());
  // Positions n_tokens - 1 .. n_tokens - 1 + draft are written: all inside the context.
  int64_t room = std::min<int64_t>(config_.num_speculative_tokens, max_model_len - n_tokens);
  // A fully accepted draft yields draft + 1 tokens.
  room = std::min(room, c.stop_condition.tokens_left() - 1);
  if (room <= 0) return 0;
  // Lookahead's cost is its window, paid whether or not an n-gram matches: its draft is a whole
  // n-gram, and the acceptance history alone decides whether it runs.
  if (config_.method == SpeculativeMethod::Lookahead) return room;
  return spec::best_draft_length(seq.spec_history.token_acceptance(), step_cost_.per_draft_token(),
                                 static_cast<int32_t>(room));
}

void Speculation::propose(const std::unordered_map<uint64_t, Completion*>& live, int64_t n_running,
                          int64_t max_model_len) {
  requests_.clear();
  if (proposer_ != nullptr) proposer_->forget_ended([&live](uint64_t id) { return live.contains(id); });
  bool batch_allows = config_.disable_by_batch_size == 0 || n_running <= config_.disable_by_batch_size;
  // A plain step now and then until the step times tell what a row costs (see the header).
  if (batch_allows && proposer_ != nullptr && !step_cost_.known() && config_.min_acceptance_rate > 0 &&
      ++unknown_cost_steps_ % kExploreEvery == 0) {
    batch_allows = false;
  }
  for (const auto& [id, c] : live) {
    Sequence& seq = c->seq;
    seq.draft.clear();
    seq.draft_parents.clear();
    seq.extra.clear();
    if (jump_forward_ && propose_forced(*c, max_model_len)) continue;
    if (!batch_allows || proposer_ == nullptr) continue;
    const int64_t room = draft_room(*c, max_model_len);
    // The history counts only steps the sequence could have speculated in.
    if (room == 0) continue;
    if (!seq.spec_history.ready()) {
      ++counters_.paused_steps;
      continue;
    }
    // Token trees where asked for, but a grammar's allowed prefix is a chain's notion.
    const bool tree = config_.num_candidates > 1 && c->group->grammar == nullptr;
    requests_.push_back({seq.id, seq.tokens, static_cast<int32_t>(room), &seq.draft, seq.blocks.cache_salt(),
                         &seq.extra, tree ? &seq.draft_parents : nullptr, tree ? config_.num_candidates : 1});
  }
  if (!requests_.empty()) proposer_->propose(requests_);
  for (const spec::DraftRequest& r : requests_) {
    if (r.draft_parents != nullptr && !r.draft_parents->empty()) {
      std::vector<int32_t>& parents = *r.draft_parents;
      // A tree whose every node follows the one before is a chain.
      bool chain = true;
      for (size_t i = 0; i < parents.size() && chain; ++i) chain = parents[i] == static_cast<int32_t>(i) - 1;
      if (chain) {
        parents.clear();
      } else {
        // Its first nodes are a tree too (parents come first): cut to the row limit and to the
        // context (every node has a cache position of its own).
        const int64_t nodes = std::min<int64_t>(spec::kMaxSpeculativeTokens, max_model_len - std::ssize(r.tokens));
        if (std::ssize(*r.draft) > nodes) r.draft->resize(static_cast<size_t>(nodes));
        parents.resize(r.draft->size());
        if (std::ssize(r.tokens) + std::ssize(*r.draft) + std::ssize(*r.extra) > max_model_len) r.extra->clear();
        continue;
      }
    }
    if (std::ssize(*r.draft) > r.max_tokens) r.draft->resize(static_cast<size_t>(r.max_tokens));
    // Structured output: tokens past the first one the grammar forbids would only be scored to
    // be rejected.
    if (!r.draft->empty()) r.draft->resize(live.at(r.sequence_id)->sampler.allowed_prefix(*r.draft));
    // Extra rows sit after the draft in the cache: all inside the context, or none.
    if (std::ssize(r.tokens) + std::ssize(*r.draft) + std::ssize(*r.extra) > max_model_len) r.extra->clear();
  }
}

void Speculation::observe(const Sequence& seq, std::span<const float> rows, size_t vocab) {
  if (proposer_ == nullptr || vocab == 0) return;
  outputs_.clear();
  for (size_t r = 0; r * vocab < rows.size(); ++r) outputs_.push_back(sampling::argmax(rows.subspan(r * vocab, vocab)));
  proposer_->observe(seq.id, outputs_);
}

void Speculation::record(Sequence& seq, int64_t drafted, int64_t accepted, int64_t extra_rows) {
  if (drafted <= 0) return;
  ++counters_.drafts;
  counters_.draft_tokens += static_cast<uint64_t>(drafted);
  counters_.accepted_tokens += static_cast<uint64_t>(accepted);
  seq.spec_history.record(drafted, accepted, accepted < drafted, drafted + extra_rows, config_.min_acceptance_rate,
                          break_even_cost());
}

void Speculation::record_rows_only(Sequence& seq, int64_t extra_rows) {
  seq.spec_history.record(0, 0, false, extra_rows, config_.min_acceptance_rate, break_even_cost());
}

void Speculation::record_tree(Sequence& seq, int64_t nodes, int64_t depth, int64_t accepted, int64_t off_first_branch,
                              bool rejected_next, int64_t extra_rows) {
  if (nodes <= 0) return;
  ++counters_.drafts;
  counters_.draft_tokens += static_cast<uint64_t>(nodes);
  counters_.accepted_tokens += static_cast<uint64_t>(accepted);
  counters_.branch_tokens += static_cast<uint64_t>(off_first_branch);
  seq.spec_history.record(depth, accepted, rejected_next, nodes + extra_rows, config_.min_acceptance_rate,
                          break_even_cost());
}

}  // namespace lumen::engine
