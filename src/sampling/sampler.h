#pragma once
// Chooses a request's next token from its row of logits. One Sampler per request (per
// sequence): it owns the request's random generator and the token counts its penalties need, so
// the same seed gives the same tokens whatever else is sampled around it.
//
// The chain, in this fixed order (z: the logits as they go):
//  1. logit bias      z[t] += bias[t]
//  2. penalties       repetition, then frequency and presence (sampling_params.h: which tokens
//                     count, and the window)
//  3. masks           while fewer than min_tokens tokens were accepted: stop_token_ids and,
//                     unless ignore_eos, the end-of-generation ids get -inf; then the
//                     LogitMask hook (for constrained output) may set any logit to -inf
//  -- temperature 0: the token is argmax z (the lowest id among equal maxima); stop here --
//  4. temperature     s = (z - max z) / T (the shift changes no probability)
//  5. top-k           keep the k largest s (ties: lower id)
//  6. top-p           keep the smallest most-likely-first prefix with probability >= top_p
//  7. min-p           keep q_i >= min_p * max q
//  8. typical-p       keep the smallest most-typical-first prefix with probability >= typical_p
//  9. draw            i with probability exp(s_i) / sum over the kept set (with no filter in
//                     force: the kLeadingCandidates most likely first, then the rest in id
//                     order, so that a device can send those and the total instead of the row)
// Steps 5-8 all use the temperature-scaled distribution, each renormalized over what the
// previous steps kept (candidate_filters.h has the exact definitions); T does not change
// top-k's choice, but it does change what top-p, min-p and typical-p keep. Tokens at -inf
// (banned by bias or masked) are never candidates and are never drawn.
//
// Reported log-probabilities (SampleResult) are the log-softmax of z after steps 1-3, at
// temperature 1 and before any filter: what the model, adjusted by this request's bias,
// penalties and masks, thinks of each token. (vLLM reports the raw model distribution by
// default; ours agrees with it when there is no bias, penalty or mask, and otherwise describes
// the distribution the draw actually started from.)
//
// Cost: steps 1-3 touch only the biased / penalized / masked tokens (plus one copy of the row
// when there are any); the row is then read a few times by vectorized passes, and steps 5-8
// work on a candidate list found by partial selection: no step sorts the vocabulary. With
// top-p and no top-k, tokens whose probability is at most (1 - top_p) / vocab can never be in
// the nucleus (the tail after the nucleus' last token outweighs 1 - top_p, and each of its
// tokens is at most as likely as that last one) and are dropped before the list is built; with
// min-p, tokens below min_p * max q likewise. No allocation per token once the workspace has
// grown to the vocabulary (only the returned `top` vector, when logprobs are asked for).
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "sampling/candidate.h"
#include "sampling/candidate_filters.h"
#include "sampling/logprobs.h"
#include "sampling/penalty_window.h"
#include "sampling/sampling_params.h"

namespace lumen::sampling {

struct SampleResult {
  int32_t token = -1;
  // log-softmax of the logits after bias, penalties and masks (see above) at `token`; NaN when
  // the request did not ask for logprobs (params.logprobs absent): computing it costs a pass
  // over the vocabulary.
  float logprob = std::numeric_limits<float>::quiet_NaN();
  // The params.logprobs most likely tokens of the same distribution, most likely first (ties:
  // lower id). The chosen token is among them only if it is that likely.
  std::vector<TokenLogprob> top;
};

// What of its row of logits a sampler's next draw needs (Sampler::row_need): a device backend
// reduces a row where it is and sends back only that (backend::StepMetadata::row_forms).
enum class RowNeed : uint8_t {
  Whole,    // every logit
  Argmax,   // the largest logit and where it is (greedy)
  Leading,  // the kLeadingCandidates most likely tokens, and perhaps the row's total weight
};

// How many of a row's most likely tokens LeadingCandidates holds: the filters' first prefix, so
// that a nucleus they settle from the whole row they settle from these.
inline constexpr size_t kLeadingCandidates = kFirstPrefix;

// A row of logits reduced to its most likely tokens (RowNeed::Leading).
struct LeadingCandidates {
  // min(kLeadingCandidates, vocab) tokens of a finite row, most likely first (more_likely
  // order: larger logit, then lower id), with their logits: select_top's answer.
  std::span<const int32_t> ids;
  std::span<const float> logits;
  // sum over the whole row of exp((z_i - z_max) * Sampler::leading_total_scale()), when that
  // scale is not 0 (top-p without top-k needs it, and a plain draw); the backend's own rounding.
  double total = 0.0;
  size_t vocab = 0;  // the row's length
};

// The constrained-output hook: which tokens may come next. Grammar and JSON-schema output is
// to plug in here; today only tests set one.
class LogitMask {
 public:
  virtual ~LogitMask() = default;
  // Sets the logit of every token that may not come next to -infinity.
  virtual void apply(std::span<float> logits) = 0;
  // The token that was chosen (Sampler::accept forwards it).
  virtual void accept(int32_t token) = 0;
  // How many of `tokens`, appended in order from the current state, the mask would allow
  // (speculative drafts are cut there: a draft token the mask forbids can never be accepted).
  virtual size_t allowed_prefix(std::span<const int32_t> tokens) const { return tokens.size(); }
  // The text every allowed continuation begins with (a grammar's forced bytes; empty: none).
  virtual std::string forced_continuation() const { return {}; }
  // Computes the next apply()'s mask ahead of time, for rows of `vocab_size` logits (the
  // engine runs it beside the forward pass); apply() computes it itself otherwise.
  virtual void prepare(size_t /*vocab_size*/) {}
  // Nothing may follow what was accepted (a grammar took its end-of-generation token): the
  // sequence ends here even with ignore_eos.
  virtual bool complete() const { return false; }
};

// Working memory of a sample() call, sized by the vocabulary. One per thread that samples:
// requests sampled one after another can share it (a Sampler also has its own, for callers
// that do not care).
class SamplerWorkspace {
 private:
  friend class Sampler;
  std::vector<float> logits;   // the row after bias / penalties / masks
  std::vector<float> weights;  // exp of the scaled row, for a draw over the whole vocabulary
  std::vector<double> block_sums;
  CandidateList candidates;
  std::vector<Candidate> selected;  // top-k and the logprobs' alternatives
  FilterScratch filters;
};

// What every sampler of one request reads and none changes: the validated parameters and the
// logit bias as a list. Shared between a request's samplers (n, best_of, every beam), so a
// request with thousands of logit_bias entries holds them once, not once per fork.
struct SamplingSetup {
  explicit SamplingSetup(const SamplingParams& params);  // throws lumen::Error when invalid
  SamplingParams params;
  std::vector<std::pair<int32_t, float>> bias;
};

class Sampler {
 public:
  // `prompt` seeds the penalty window. `end_of_generation`: the vocabulary's end-of-generation
  // ids, masked while fewer than params.min_tokens tokens were accepted (unless ignore_eos).
  // Throws lumen::Error for invalid params.
  explicit Sampler(const SamplingParams& params, std::span<const int32_t> prompt = {},
                   std::span<const int32_t> end_of_generation = {});
  // A sampler on a shared setup for choice `choice_index` of its request: when the setup has a
  // seed it draws from seed_of_choice(seed, choice_index) (seed_stream.h), so the forks of one
  // request draw different but reproducible streams, and no other seed's choice shares them.
  Sampler(std::shared_ptr<const SamplingSetup> setup, std::span<const int32_t> prompt,
          std::span<const int32_t> end_of_generation, uint64_t choice_index = 0);

  // Installs the grammar hook (nullptr removes it). No engine path calls it yet: structured
  // output (issue 18) installs its token masks here, from the output processor.
  void set_mask(std::unique_ptr<LogitMask> mask) { mask_ = std::move(mask); }

  // The next token from one row of logits (one per vocabulary entry). Draws from the
  // request's generator unless the temperature is 0. Throws lumen::Error when every logit is
  // -inf (everything masked), or the row holds +inf.
  SampleResult sample(std::span<const float> logits);
  SampleResult sample(std::span<const float> logits, SamplerWorkspace& workspace);

  // Whether the next sample() needs nothing of its row but the argmax: temperature 0 and
  // nothing that changes the logits (no bias, penalty, ban or mask) or reads them (logprobs).
  // Then sample_argmax() gives what sample() would, from the row's argmax alone (a device
  // backend reduces such rows where they are and sends back only the token).
  bool needs_only_argmax() const;
  // sample() of a row whose largest value is `value`, first held at `token` (needs_only_argmax()
  // must hold; throws as sample() does for a row that is all -inf or holds +inf).
  SampleResult sample_argmax(int32_t token, float value) const;

  // What the next sample() needs of its row. Argmax: needs_only_argmax(). Leading: a sampled
  // draw (temperature > 0) that nothing changes or reads beyond the draw (as for Argmax), with
  // no typical-p and no top-k above kLeadingCandidates (a larger top-k is the set top-p's total
  // and min-p's order come from). Whole otherwise.
  RowNeed row_need() const;
  // For RowNeed::Leading: the scale (1 / temperature) at which sample_leading() needs the row's
  // total weight, or 0 when it needs none (top-k is in force, or min-p alone).
  float leading_total_scale() const;
  // sample() of a row from its leading candidates (row_need() must be Leading): the same token,
  // from the same draw of the generator, as sample() of the whole row gives when `row.total` is
  // what sample() computes. nullopt, drawing nothing, when they do not settle the draw (the
  // nucleus or the min-p set reaches past them, or a plain draw lands past them): the caller
  // then samples the whole row.
  std::optional<SampleResult> sample_leading(const LeadingCandidates& row, SamplerWorkspace& workspace);
  // Whether sample_leading(row) would draw (true) or decline (false), drawing nothing: so that
  // the rows to bring back whole can be fetched together before any is sampled.
  // `draws_before`: how many draws this sampler makes first (a draft's earlier rows, each one
  // draw); a plain draw's answer depends on the generator, the filters' does not.
  bool leading_settles(const LeadingCandidates& row, SamplerWorkspace& workspace, size_t draws_before = 0) const;

  // Records the token that was appended to the sequence (penalty counts, min_tokens, mask).
  void accept(int32_t token);

  // How many of the draft `tokens` the mask (if any) allows in a row from here.
  size_t allowed_prefix(std::span<const int32_t> tokens) const {
    return mask_ ? mask_->allowed_prefix(tokens) : tokens.size();
  }

  std::string forced_continuation() const { return mask_ ? mask_->forced_continuation() : std::string(); }
  bool has_mask() const { return mask_ != nullptr; }
  bool mask_complete() const { return mask_ && mask_->complete(); }
  // The mask's next work done now (LogitMask::prepare); safe on another thread while nothing
  // else uses this sampler.
  void prepare_mask(size_t vocab_size) {
    if (mask_) mask_->prepare(vocab_size);
  }

  int64_t n_accepted() const { return n_accepted_; }
  // The request's seed: params.seed, or one drawn from std::random_device when it was absent.
  // Given as params.seed it reproduces this sampler's draws (at the same choice index: the
  // generator is seeded with seed_of_choice(seed, index)).
  uint64_t seed() const { return seed_; }
  const SamplingParams& params() const { return setup_->params; }

 private:
  // Steps 1-3: the logits to sample from (the input itself when nothing changes them).
  std::span<const float> process(std::span<const float> logits, SamplerWorkspace& ws);
  int32_t draw(std::span<const float> z, float z_max, SamplerWorkspace& ws);
  // 1 / T, kept finite so that a tiny temperature still gives -inf (not NaN) for 0 * inf.
  float inverse_temperature() const;
  // The raw logit below which no token can be kept by top-p (whose set weighs `top_p_total`)
  // or min-p, when top-k is not in force: the tokens sample() collects as candidates.
  float candidate_threshold(float z_max, double top_p_total, size_t vocab) const;
  // Whether draw() of a row of `vocab` logits is draw_dense: no filter is in force.
  bool draws_dense(size_t vocab) const;
  // sample_leading's refusals: not a Leading draw, a malformed row, -inf or +inf at its top.
  void check_leading(const LeadingCandidates& row) const;
  // sample_leading's filters, up to the draw: the candidates to draw from in
  // workspace.candidates, or false when the leading candidates do not settle them.
  bool narrow_leading(const LeadingCandidates& row, SamplerWorkspace& ws) const;
  // draw_dense's token for the uniform `u` from the leading candidates, or nullopt when the
  // draw lands past them.
  std::optional<int32_t> dense_leading_pick(const LeadingCandidates& row, double u, SamplerWorkspace& ws) const;
  // The walk over the leading candidates (most likely first) that begins draw_dense: `u` (a
  // uniform times the row's total) less each one's weight until one outweighs it.
  struct LeadingPick {
    int32_t token = -1;          // the drawn token; -1: the draw lands past the candidates
    int32_t last_positive = -1;  // the last candidate with weight (rounding's answer)
  };
  static LeadingPick pick_leading(std::span<const Candidate> leading, float z_max, float inv_t, double& u);
  // The index `u` lands on walking `weights` by their blocks' sums; the last one with weight when
  // rounding carries it past them all; nullopt when nothing weighs anything.
  static std::optional<size_t> walk_blocks(std::span<const float> weights, std::span<const double> block_sums,
                                           double u);
  // A row that is all leading candidates: its total weight summed as draw() sums the row.
  static double whole_row_total(const LeadingCandidates& row, float z_max, float inv_t, SamplerWorkspace& ws);
  int32_t draw_dense(std::span<const float> z, float z_max, float inv_t, SamplerWorkspace& ws);
  int32_t draw_candidates(const CandidateList& candidates, SamplerWorkspace& ws);
  // An index of x drawn with probability exp((x_i - shift) * scale) / sum.
  size_t draw_index(std::span<const float> x, float shift, float scale, SamplerWorkspace& ws);
  double uniform();  // in [0, 1)
  // The uniform() that follows `draws_before` more draws, drawing nothing.
  double peek_uniform(size_t draws_before) const;

  std::shared_ptr<const SamplingSetup> setup_;
  std::vector<int32_t> banned_until_min_;  // stop ids and (unless ignore_eos) EOS ids
  PenaltyWindow window_;
  std::unique_ptr<LogitMask> mask_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  int64_t n_accepted_ = 0;
  SamplerWorkspace own_workspace_;
};

// The index of the largest logit (the lowest index among equals).
int32_t argmax(std::span<const float> logits);

}  // namespace lumen::sampling
