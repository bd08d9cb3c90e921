#include "sampling/sampler.h"

#include <algorithm>
#include <cmath>

#include "sampling/candidate_filters.h"
#include "sampling/dense_ops.h"
#include "sampling/fast_exp.h"
#include "sampling/logit_processors.h"
#include "sampling/seed_stream.h"
#include "util/error.h"

namespace lumen::sampling {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

const SamplingParams& validated(const SamplingParams& params) {
  params.validate();
  return params;
}

uint64_t fresh_seed() {
  std::random_device device;
  return (static_cast<uint64_t>(device()) << 32) ^ static_cast<uint64_t>(device());
}

// The top 53 bits of one 64-bit draw: every double in [0, 1) on a 2^-53 grid, equally likely,
// and the same on every platform (std::uniform_real_distribution is not specified that far).
double unit_interval(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// s = (z - z_max) / T, in place.
void scale_candidates(CandidateList& candidates, float z_max, float inv_t) {
  for (float& logit : candidates.logits) logit = (logit - z_max) * inv_t;
}

}  // namespace

int32_t argmax(std::span<const float> logits) {
  const size_t i = first_index_of(logits, max_value(logits));
  return i < logits.size() ? static_cast<int32_t>(i) : 0;  // an all-NaN row: any index will do
}

SamplingSetup::SamplingSetup(const SamplingParams& p)
    : params(validated(p)), bias(p.logit_bias.begin(), p.logit_bias.end()) {}

Sampler::Sampler(const SamplingParams& params, std::span<const int32_t> prompt,
                 std::span<const int32_t> end_of_generation)
    : Sampler(std::make_shared<const SamplingSetup>(params), prompt, end_of_generation) {}

Sampler::Sampler(std::shared_ptr<const SamplingSetup> setup, std::span<const int32_t> prompt,
                 std::span<const int32_t> end_of_generation, uint64_t choice_index)
    : setup_(std::move(setup)),
      // Without penalties the window counts nothing (and costs nothing).
      window_(setup_->params.has_penalties() ? setup_->params.penalty_last_n : 0),
      seed_(setup_->params.seed ? *setup_->params.seed : fresh_seed()),
      rng_(seed_of_choice(seed_, choice_index)) {
  const SamplingParams& params = setup_->params;
  if (params.min_tokens > 0) {
    banned_until_min_ = params.stop_token_ids;
    if (!params.ignore_eos) {
      banned_until_min_.insert(banned_until_min_.end(), end_of_generation.begin(),
                               end_of_generation.end());
    }
  }
  // Only the last penalty_last_n prompt tokens can ever be in the window.
  size_t first = 0;
  if (params.penalty_last_n > 0 && prompt.size() > static_cast<size_t>(params.penalty_last_n)) {
    first = prompt.size() - static_cast<size_t>(params.penalty_last_n);
  }
  for (size_t i = first; i < prompt.size(); ++i) window_.push(prompt[i], false);
}

void Sampler::accept(int32_t token) {
  if (token < 0) fail("token id {} is negative", token);
  window_.push(token, true);
  ++n_accepted_;
  if (mask_) mask_->accept(token);
}

double Sampler::uniform() { return unit_interval(rng_()); }

double Sampler::peek_uniform(size_t draws_before) const {
  std::mt19937_64 ahead = rng_;
  ahead.discard(draws_before);
  return unit_interval(ahead());
}

std::span<const float> Sampler::process(std::span<const float> logits, SamplerWorkspace& ws) {
  const bool penalize = setup_->params.has_penalties() && window_.distinct() > 0;
  const bool ban = n_accepted_ < setup_->params.min_tokens && !banned_until_min_.empty();
  if (setup_->bias.empty() && !penalize && !ban && !mask_) return logits;
  ws.logits.assign(logits.begin(), logits.end());
  std::span<float> z(ws.logits);
  apply_logit_bias(z, setup_->bias);  // 1
  if (penalize) {              // 2
    apply_penalties(
        z, window_,
        {setup_->params.repetition_penalty, setup_->params.frequency_penalty, setup_->params.presence_penalty});
  }
  if (ban) {  // 3
    for (int32_t token : banned_until_min_) {
      if (static_cast<size_t>(token) < z.size()) z[static_cast<size_t>(token)] = -kInf;
    }
  }
  if (mask_) mask_->apply(z);
  return z;
}

bool Sampler::needs_only_argmax() const {
  const SamplingParams& params = setup_->params;
  const bool ban = n_accepted_ < params.min_tokens && !banned_until_min_.empty();
  return params.temperature == 0.0f && setup_->bias.empty() && !params.has_penalties() && !ban && !mask_ &&
         !params.logprobs;
}

SampleResult Sampler::sample_argmax(int32_t token, float value) const {
  if (!needs_only_argmax()) fail("sample_argmax: this request's next token needs its whole row of logits");
  if (value == -kInf) fail("every token is masked: no token can be sampled");
  if (value == kInf) fail("the logits hold +inf");
  if (token < 0) fail("sample_argmax: token id {} is negative", token);
  SampleResult result;
  result.token = token;
  return result;
}

SampleResult Sampler::sample(std::span<const float> logits) {
  return sample(logits, own_workspace_);
}

SampleResult Sampler::sample(std::span<const float> logits, SamplerWorkspace& ws) {
  if (logits.empty()) fail("cannot sample from an empty row of logits");
  const std::span<const float> z = process(logits, ws);
  const float z_max = max_value(z);
  if (z_max == -kInf) fail("every token is masked: no token can be sampled");
  if (z_max == kInf) fail("the logits hold +inf");
  SampleResult result;
  result.token = setup_->params.temperature == 0.0f ? static_cast<int32_t>(first_index_of(z, z_max))
                                             : draw(z, z_max, ws);
  if (setup_->params.logprobs) {
    result.logprob = token_logprobs(z, result.token, *setup_->params.logprobs, result.top, ws.selected);
  }
  return result;
}

float Sampler::inverse_temperature() const {
  return std::min(1.0f / setup_->params.temperature, std::numeric_limits<float>::max());
}

float Sampler::candidate_threshold(float z_max, double top_p_total, size_t vocab) const {
  const SamplingParams& params = setup_->params;
  // Drop early what top-p and min-p can never keep (see sampler.h), on the scaled scale...
  float floor = -kInf;
  if (params.top_p < 1.0f) {
    const double bound = top_p_total * (1.0 - static_cast<double>(params.top_p)) / static_cast<double>(vocab);
    floor = static_cast<float>(std::log(bound));
  }
  if (params.min_p > 0.0f) floor = std::max(floor, static_cast<float>(std::log(static_cast<double>(params.min_p))));
  // ...then on the raw logits, with a margin far beyond any rounding: the exact filters decide,
  // this only spares them the tokens that cannot matter.
  if (!(floor > -kInf)) return -kInf;
  return z_max + (floor - 0.01f) * params.temperature - 1e-5f * (std::abs(z_max) + 1.0f);
}

int32_t Sampler::draw(std::span<const float> z, float z_max, SamplerWorkspace& ws) {
  const float inv_t = inverse_temperature();
  const size_t vocab = z.size();
  const bool top_k = setup_->params.top_k > 0 && static_cast<size_t>(setup_->params.top_k) < vocab;
  const bool top_p = setup_->params.top_p < 1.0f;
  const bool min_p = setup_->params.min_p > 0.0f;
  const bool typical = setup_->params.typical_p < 1.0f;
  if (!top_k && !top_p && !min_p && !typical) return draw_dense(z, z_max, inv_t, ws);

  CandidateList& c = ws.candidates;
  double top_p_total = 0.0;  // sum exp(s) over the set top-p acts on
  if (top_k) {
    select_top(z, static_cast<size_t>(setup_->params.top_k), ws.selected);  // 5
    c.assign(ws.selected, false);                                    // most likely first
    scale_candidates(c, z_max, inv_t);
    if (top_p) top_p_total = sum_exp(c.logits, 0.0f, 1.0f);
  } else {
    if (top_p) top_p_total = sum_exp(z, z_max, inv_t);
    collect_at_least(z, candidate_threshold(z_max, top_p_total, vocab), c);
    scale_candidates(c, z_max, inv_t);
  }
  if (top_p) keep_top_p(c, setup_->params.top_p, top_p_total, ws.filters);  // 6
  if (min_p) keep_min_p(c, setup_->params.min_p);                           // 7
  if (typical) keep_typical(c, setup_->params.typical_p, ws.filters);       // 8
  return draw_candidates(c, ws);                                     // 9
}

// A row that is all leading candidates: its total weight summed as sum_exp sums the row, in id
// order (the backend may not have computed it: top-k asked for none, but top-k is off in so
// short a row).
double Sampler::whole_row_total(const LeadingCandidates& row, float z_max, float inv_t, SamplerWorkspace& ws) {
  ws.selected.clear();
  for (size_t i = 0; i < row.ids.size(); ++i) ws.selected.push_back({row.ids[i], row.logits[i]});
  std::sort(ws.selected.begin(), ws.selected.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  std::vector<float>& logits = ws.logits;
  logits.clear();
  for (const Candidate& c : ws.selected) logits.push_back(c.logit);
  return sum_exp(logits, z_max, inv_t);
}

RowNeed Sampler::row_need() const {
  if (needs_only_argmax()) return RowNeed::Argmax;
  const SamplingParams& params = setup_->params;
  const bool ban = n_accepted_ < params.min_tokens && !banned_until_min_.empty();
  if (params.temperature == 0.0f || !setup_->bias.empty() || params.has_penalties() || ban || mask_ ||
      params.logprobs || params.typical_p < 1.0f) {
    return RowNeed::Whole;
  }
  // A top-k beyond the candidates would be the set top-p's total and min-p's order come from.
  if (params.top_k > 0) return static_cast<size_t>(params.top_k) <= kLeadingCandidates ? RowNeed::Leading : RowNeed::Whole;
  // top-p, min-p, or a plain draw (draw_dense walks the leading candidates first).
  return RowNeed::Leading;
}

float Sampler::leading_total_scale() const {
  const SamplingParams& params = setup_->params;
  if (params.top_k > 0) return 0.0f;                             // top-k's set is among the candidates
  if (params.top_p >= 1.0f && params.min_p > 0.0f) return 0.0f;  // min-p's floor is relative to the max
  return inverse_temperature();                                  // top-p's total, or a plain draw's
}

bool Sampler::draws_dense(size_t vocab) const {
  const SamplingParams& params = setup_->params;
  const bool top_k = params.top_k > 0 && static_cast<size_t>(params.top_k) < vocab;
  return !top_k && params.top_p >= 1.0f && params.min_p <= 0.0f && params.typical_p >= 1.0f;
}

std::optional<SampleResult> Sampler::sample_leading(const LeadingCandidates& row, SamplerWorkspace& ws) {
  check_leading(row);
  std::optional<int32_t> token;
  if (draws_dense(row.vocab)) {
    token = dense_leading_pick(row, peek_uniform(0), ws);
    if (token) uniform();  // the draw peek_uniform saw
  } else if (narrow_leading(row, ws)) {
    token = draw_candidates(ws.candidates, ws);
  }
  if (!token) return std::nullopt;
  SampleResult result;
  result.token = *token;
  return result;
}

bool Sampler::leading_settles(const LeadingCandidates& row, SamplerWorkspace& ws, size_t draws_before) const {
  check_leading(row);
  if (draws_dense(row.vocab)) return dense_leading_pick(row, peek_uniform(draws_before), ws).has_value();
  return narrow_leading(row, ws);
}

void Sampler::check_leading(const LeadingCandidates& row) const {
  if (row_need() != RowNeed::Leading) fail("sample_leading: this request's next token needs more of its row");
  const size_t n = row.ids.size();
  if (n == 0 || n != row.logits.size() || n > row.vocab || (n < kLeadingCandidates && n != row.vocab)) {
    fail("sample_leading: {} leading candidates of a row of {}", n, row.vocab);
  }
  if (row.logits[0] == -kInf) fail("every token is masked: no token can be sampled");
  if (row.logits[0] == kInf) fail("the logits hold +inf");
}

std::optional<int32_t> Sampler::dense_leading_pick(const LeadingCandidates& row, double u, SamplerWorkspace& ws) const {
  const float z_max = row.logits[0];
  const float inv_t = inverse_temperature();
  const bool whole = row.ids.size() == row.vocab;
  const double total = whole ? whole_row_total(row, z_max, inv_t, ws) : row.total;
  // The most likely token alone weighs 1.
  if (!(total >= 1.0)) fail("sample_leading: a temperature draw needs the row's total weight (got {})", total);
  ws.selected.clear();
  for (size_t i = 0; i < row.ids.size(); ++i) ws.selected.push_back({row.ids[i], row.logits[i]});
  u *= total;
  const LeadingPick pick = pick_leading(ws.selected, z_max, inv_t, u);
  if (pick.token >= 0) return pick.token;
  // Past every token's weight by rounding alone: draw_dense's answer too.
  if (whole) return pick.last_positive;
  return std::nullopt;  // the draw lands among the other tokens
}

bool Sampler::narrow_leading(const LeadingCandidates& row, SamplerWorkspace& ws) const {
  const size_t n = row.ids.size();
  const float z_max = row.logits[0];
  // draw()'s steps on the leading candidates. Where draw() selects or collects from the row, the
  // same tokens are among these, in the same order, unless the set reaches past them.
  const SamplingParams& params = setup_->params;
  const float inv_t = inverse_temperature();
  const bool top_k = params.top_k > 0 && static_cast<size_t>(params.top_k) < row.vocab;
  const bool top_p = params.top_p < 1.0f;
  const bool min_p = params.min_p > 0.0f;
  CandidateList& c = ws.candidates;
  double top_p_total = 0.0;
  // Whether every token draw() would collect is here: the threshold (or top-k) cut inside them.
  bool settled = top_k || n == row.vocab;
  if (top_k) {
    ws.selected.clear();
    for (size_t i = 0; i < static_cast<size_t>(params.top_k); ++i) ws.selected.push_back({row.ids[i], row.logits[i]});
    c.assign(ws.selected, false);
    scale_candidates(c, z_max, inv_t);
    if (top_p) top_p_total = sum_exp(c.logits, 0.0f, 1.0f);
  } else {
    if (top_p) top_p_total = n == row.vocab ? whole_row_total(row, z_max, inv_t, ws) : row.total;
    // The most likely token alone weighs 1.
    if (top_p && !(top_p_total >= 1.0)) fail("sample_leading: top-p needs the row's total weight (got {})", top_p_total);
    const float threshold = candidate_threshold(z_max, top_p_total, row.vocab);
    ws.selected.clear();
    for (size_t i = 0; i < n; ++i) {
      if (row.logits[i] >= threshold) ws.selected.push_back({row.ids[i], row.logits[i]});
    }
    settled = settled || ws.selected.size() < n;
    // collect_at_least's order.
    std::sort(ws.selected.begin(), ws.selected.end(), [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    c.assign(ws.selected, true);
    scale_candidates(c, z_max, inv_t);
  }
  if (top_p) {
    if (!keep_top_p(c, params.top_p, top_p_total, ws.filters, !settled)) return false;
    settled = true;  // the nucleus is within the leading candidates: min-p acts on it alone
  }
  if (min_p) {
    const size_t before = c.size();
    keep_min_p(c, params.min_p);
    // Every leading candidate passed: the tokens after them might too.
    if (!settled && c.size() == before) return false;
  }
  return true;
}

int32_t Sampler::draw_candidates(const CandidateList& c, SamplerWorkspace& ws) {
  if (c.empty()) fail("no candidate token is left to sample");  // unreachable: z_max is finite
  // Re-shifted: typical-p may have dropped the most likely tokens, and what is left must not
  // underflow to zero weight.
  return c.ids[draw_index(c.logits, max_value(c.logits), 1.0f, ws)];
}

// A plain draw walks the row's leading candidates first, most likely first, then the other
// tokens in id order. Any fixed order draws each token with its probability; this one lets a
// device send a row's leading candidates and total weight instead of the row (sample_leading
// settles the draw from them unless it lands past them: 1 - their weight of the time).
int32_t Sampler::draw_dense(std::span<const float> z, float z_max, float inv_t,
                            SamplerWorkspace& ws) {
  const size_t n = z.size();
  ws.weights.resize(n);
  ws.block_sums.resize((n + kBlock - 1) / kBlock);
  const double total = exp_with_block_sums(z, z_max, inv_t, ws.weights, ws.block_sums);
  select_top(z, kLeadingCandidates, ws.selected);
  double u = uniform() * total;
  const LeadingPick pick = pick_leading(ws.selected, z_max, inv_t, u);
  if (pick.token >= 0) return pick.token;
  // The other tokens: the leading ones' weight taken out of their blocks, summed again.
  for (const Candidate& c : ws.selected) ws.weights[static_cast<size_t>(c.id)] = 0.0f;
  for (const Candidate& c : ws.selected) {
    const size_t b = static_cast<size_t>(c.id) / kBlock;
    double sum = 0.0;
    for (size_t i = b * kBlock; i < std::min(n, (b + 1) * kBlock); ++i) sum += ws.weights[i];
    ws.block_sums[b] = sum;
  }
  if (std::optional<size_t> i = walk_blocks(ws.weights, ws.block_sums, u)) return static_cast<int32_t>(*i);
  return pick.last_positive;  // the others weigh nothing: u passed the candidates by rounding
}

Sampler::LeadingPick Sampler::pick_leading(std::span<const Candidate> leading, float z_max, float inv_t, double& u) {
  LeadingPick pick;
  for (const Candidate& c : leading) {
    // One float expression, as the candidates' weights are computed everywhere they are walked.
    const double w = fast_exp((c.logit - z_max) * inv_t);
    if (w <= 0.0) continue;
    if (u < w) {
      pick.token = c.id;
      return pick;
    }
    u -= w;
    pick.last_positive = c.id;
  }
  return pick;
}

std::optional<size_t> Sampler::walk_blocks(std::span<const float> weights, std::span<const double> block_sums,
                                           double u) {
  // Find the block by its sum, then the entry inside it: two short walks, not one over all.
  size_t b = 0;
  while (b < block_sums.size() && !(u < block_sums[b])) u -= block_sums[b++];
  if (b == block_sums.size()) {  // rounding carried u past the end: the last token with weight
    while (b > 0 && block_sums[b - 1] == 0.0) --b;
    if (b == 0) return std::nullopt;
    u = std::numeric_limits<double>::infinity();
    --b;
  }
  const size_t start = b * kBlock, end = std::min(start + kBlock, weights.size());
  size_t last_positive = start;
  for (size_t i = start; i < end; ++i) {
    const double w = weights[i];
    if (w <= 0.0) continue;
    if (u < w) return i;
    u -= w;
    last_positive = i;
  }
  return last_positive;  // u ran past the block's end by rounding
}

size_t Sampler::draw_index(std::span<const float> x, float shift, float scale, SamplerWorkspace& ws) {
  const size_t n = x.size();
  ws.weights.resize(n);
  ws.block_sums.resize((n + kBlock - 1) / kBlock);
  const double total = exp_with_block_sums(x, shift, scale, ws.weights, ws.block_sums);
  // The largest value weighs 1: some block has weight.
  return walk_blocks(ws.weights, ws.block_sums, uniform() * total).value_or(0);
}

}  // namespace lumen::sampling
