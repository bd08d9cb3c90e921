#include "sampling/beam_search.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampling/dense_ops.h"
#include "util/error.h"

namespace lumen::sampling {

BeamSearch::BeamSearch(BeamSearchConfig config) : config_(std::move(config)) {
  if (config_.width < 1) fail("beam search: the width must be at least 1 (got {})", config_.width);
  if (config_.n_results < 1 || config_.n_results > config_.width) {
    fail("beam search: n ({}) must be in [1, width = {}]", config_.n_results, config_.width);
  }
  if (!std::isfinite(config_.length_penalty)) fail("beam search: length_penalty must be finite");
  if (config_.max_tokens < 1) fail("beam search: max_tokens must be at least 1");
  live_.emplace_back();
}

double BeamSearch::score(double sum_logprob, size_t length, float length_penalty) {
  return sum_logprob / std::pow(static_cast<double>(std::max<size_t>(length, 1)),
                                static_cast<double>(length_penalty));
}

bool BeamSearch::is_end(int32_t token) const {
  return std::find(config_.end_tokens.begin(), config_.end_tokens.end(), token) !=
         config_.end_tokens.end();
}

void BeamSearch::propose(size_t parent, std::span<const float> logits) {
  const Beam& beam = live_[parent];
  std::span<const float> row = logits;
  if (static_cast<int64_t>(beam.tokens.size()) < config_.min_tokens) {
    // Before min_tokens an end token may not come: it is banned before the softmax, as the
    // sampler's mask bans it, so the other tokens share its probability.
    masked_.assign(logits.begin(), logits.end());
    for (int32_t token : config_.end_tokens) {
      if (token >= 0 && static_cast<size_t>(token) < masked_.size()) {
        masked_[static_cast<size_t>(token)] = -std::numeric_limits<float>::infinity();
      }
    }
    row = masked_;
  }
  const float max = max_value(row);
  if (!std::isfinite(max)) fail("beam search: a row of logits has no finite value");
  const double log_total = std::log(sum_exp(row, max, 1.0f));
  select_top(row, 2 * static_cast<size_t>(config_.width), top_scratch_);
  for (const Candidate& c : top_scratch_) {
    const double logprob = static_cast<double>(c.logit) - static_cast<double>(max) - log_total;
    proposals_.push_back({beam.sum_logprob + logprob, parent, c.id, static_cast<float>(logprob)});
  }
}

void BeamSearch::finish(const Beam& parent, int32_t token, float logprob, FinishReason reason) {
  BeamHypothesis h;
  h.tokens = parent.tokens;
  h.tokens.push_back({token, logprob});
  h.sum_logprob = parent.sum_logprob + static_cast<double>(logprob);
  h.score = score(h.sum_logprob, h.tokens.size(), config_.length_penalty);
  h.finish = reason;
  keep(std::move(h));
}

void BeamSearch::keep(BeamHypothesis h) {
  // The best `width`, best first; an equal score goes after the earlier ones.
  auto at = std::upper_bound(finished_.begin(), finished_.end(), h.score,
                             [](double s, const BeamHypothesis& o) { return s > o.score; });
  if (at - finished_.begin() >= config_.width) return;
  finished_.insert(at, std::move(h));
  if (finished_.size() > static_cast<size_t>(config_.width)) finished_.pop_back();
}

const std::vector<BeamSearch::Extension>& BeamSearch::step(
    std::span<const std::span<const float>> logits) {
  if (done()) fail("beam search: step() after the search is done");
  if (logits.size() != live_.size()) {
    fail("beam search: {} rows of logits for {} live beams", logits.size(), live_.size());
  }
  proposals_.clear();
  for (size_t i = 0; i < live_.size(); ++i) propose(i, logits[i]);
  std::sort(proposals_.begin(), proposals_.end(), [](const Proposal& a, const Proposal& b) {
    if (a.sum != b.sum) return a.sum > b.sum;
    if (a.parent != b.parent) return a.parent < b.parent;
    return a.token < b.token;
  });
  extensions_.clear();
  std::vector<Beam> next;
  size_t made = 0;  // beams made this round, including those finished at max_tokens
  for (const Proposal& p : proposals_) {
    if (made == static_cast<size_t>(config_.width)) break;
    const Beam& parent = live_[p.parent];
    if (is_end(p.token)) {
      finish(parent, p.token, p.logprob, FinishReason::Stop);
      continue;
    }
    ++made;
    if (static_cast<int64_t>(parent.tokens.size()) + 1 >= config_.max_tokens) {
      finish(parent, p.token, p.logprob, FinishReason::Length);
      continue;
    }
    Beam child;
    child.tokens = parent.tokens;
    child.tokens.push_back({p.token, p.logprob});
    child.sum_logprob = p.sum;
    next.push_back(std::move(child));
    extensions_.push_back({p.parent, p.token});
  }
  live_ = std::move(next);
  return extensions_;
}

double BeamSearch::upper_bound(const Beam& beam) const {
  // Its sum can only fall; the score's denominator length^lp is best at the longest length
  // when lp > 0 (it divides a negative sum) and at the shortest (one more token) otherwise.
  const size_t shortest = beam.tokens.size() + 1;
  const auto longest = static_cast<size_t>(config_.max_tokens);
  const double s = beam.sum_logprob;
  return config_.length_penalty > 0.0f ? score(s, longest, config_.length_penalty)
                                       : score(s, shortest, config_.length_penalty);
}

bool BeamSearch::done() const {
  if (live_.empty()) return true;
  if (finished_.size() < static_cast<size_t>(config_.width)) return false;
  if (config_.early_stopping) return true;
  const double worst_kept = finished_.back().score;
  return std::all_of(live_.begin(), live_.end(),
                     [&](const Beam& beam) { return upper_bound(beam) <= worst_kept; });
}

void BeamSearch::stop() {
  for (const Beam& beam : live_) {
    if (beam.tokens.empty()) continue;  // nothing generated: no hypothesis
    BeamHypothesis h;
    h.tokens = beam.tokens;
    h.sum_logprob = beam.sum_logprob;
    h.score = score(h.sum_logprob, h.tokens.size(), config_.length_penalty);
    keep(std::move(h));
  }
  live_.clear();
}

std::vector<BeamHypothesis> BeamSearch::results() const {
  const size_t n = std::min(finished_.size(), static_cast<size_t>(config_.n_results));
  return {finished_.begin(), finished_.begin() + static_cast<std::ptrdiff_t>(n)};
}

}  // namespace lumen::sampling
