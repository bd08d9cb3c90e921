#include "server/generation.h"

#include <algorithm>
#include <cmath>

#include "lumen/constraint_error.h"
#include "server/api_error.h"
#include "server/client_id.h"

namespace lumen::server {

namespace {

double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// The request's params for one prompt: max_tokens defaulted or checked against the room the
// context leaves (OpenAI: 16 for completions; vLLM: the rest of the context for chat).
SamplingParams params_for_prompt(const GenerationOptions& options, Endpoint endpoint,
                                           int64_t prompt_len, int64_t max_model_len, bool context_shift) {
  if (prompt_len >= max_model_len) {
    invalid("prompt", "the prompt has {} tokens; the model's context holds {} (prompt and output together)",
            prompt_len, max_model_len);
  }
  const int64_t room = max_model_len - prompt_len;
  SamplingParams params = options.params;
  if (options.max_tokens_given) {
    if (params.max_tokens > room && !context_shift) {
      invalid(endpoint == Endpoint::Completions ? "max_tokens" : "max_completion_tokens",
              "the model's context holds {} tokens; the prompt has {} and {} were asked for", max_model_len,
              prompt_len, params.max_tokens);
    }
  } else {
    params.max_tokens = max_new_tokens(options, endpoint, room);
  }
  return params;
}

}  // namespace

Generation::Generation(ServerContext& context, const std::vector<std::vector<int32_t>>& prompts,
                       const GenerationOptions& options, Endpoint endpoint, Clock::time_point arrival, int socket,
                       Admission::Places places)
    : context_(context), arrival_(arrival), places_(std::move(places)) {
  const auto n = static_cast<size_t>(options.n);
  // Check every prompt before queueing any, so a bad one leaves nothing behind.
  std::vector<SamplingParams> per_prompt;
  for (const auto& prompt : prompts) {
    per_prompt.push_back(params_for_prompt(options, endpoint, static_cast<int64_t>(prompt.size()),
                                           context.limits.max_model_len, context.limits.context_shift));
    per_prompt.back().validate_for_vocab(context.limits.vocab_size);
    prompt_tokens_ += static_cast<int64_t>(prompt.size());
  }
  // The engine shares its seats and prefill fairly between clients (client_id.h).
  const uint64_t client = engine_client(places_.client());
  try {
    for (size_t p = 0; p < prompts.size(); ++p) {
      SamplingParams params = per_prompt[p];
      params.n = options.n;
      if (params.seed) *params.seed += choices_.size();  // choice j of this prompt: + j
      for (RequestHandle& handle :
           context.engine.add_request_n(prompts[p], params, 0, options.cache_salt, client, options.images)) {
        context.admission.track(handle.id());
        choices_.push_back(Choice{handle, p, false, 0, {}, {}});
      }
    }
  } catch (const ConstraintError& e) {
    // The schema or grammar does not compile: the client's, and the message says where.
    abort_all();
    release();
    throw ApiError(400, e.what(), options.structured_field);
  } catch (...) {
    abort_all();
    release();
    throw;
  }
  context.metrics.add_prompt_tokens(prompt_tokens_ * static_cast<int64_t>(n));
  submitted_ = Clock::now();
  if (socket >= 0) {
    std::vector<uint64_t> ids;
    for (const Choice& c : choices_) {
      if (ids.empty() || ids.back() != c.handle.id()) ids.push_back(c.handle.id());
    }
    watch_ticket_ = context.watcher.watch(socket, std::move(ids));
  }
}

Generation::~Generation() {
  abort_all();
  // Choices whose finishing chunk nobody will read (the client left) end here, as aborted.
  for (Choice& c : choices_) {
    if (!c.finished) context_.metrics.count_finished(FinishReason::Abort);
    c.finished = true;
  }
  release();
}

void Generation::release() {
  if (watch_ticket_ != 0) context_.watcher.unwatch(watch_ticket_);
  watch_ticket_ = 0;
  for (const Choice& c : choices_) context_.admission.untrack(c.handle.id());
  places_.release();
}

void Generation::abort_all() {
  // Aborting a request ends all its choices; an id is aborted once.
  uint64_t last = 0;
  for (const Choice& c : choices_) {
    if (!c.finished && c.handle.id() != last) context_.engine.abort(c.handle.id());
    if (!c.finished) last = c.handle.id();
  }
}

bool Generation::request_finished(uint64_t request_id) const {
  return std::all_of(choices_.begin(), choices_.end(),
                     [&](const Choice& c) { return c.handle.id() != request_id || c.finished; });
}

int64_t Generation::completion_tokens() const {
  int64_t total = 0;
  for (const Choice& c : choices_) total += c.n_tokens;
  return total;
}

bool Generation::next(size_t& choice, StreamChunk& chunk) {
  for (size_t tried = 0; tried < choices_.size(); ++tried) {
    const size_t i = cursor_;
    cursor_ = (cursor_ + 1) % choices_.size();
    Choice& c = choices_[i];
    if (c.finished) continue;
    if (!c.handle.next(chunk)) {
      c.finished = true;  // defensive: the finishing chunk was already taken
      continue;
    }
    record(c, chunk);
    choice = i;
    return true;
  }
  // Every choice has finished: the admission places go back now, before the route writes the
  // response's last bytes. Given back only when the route let go of this, a client that sent
  // its next request as soon as it read [DONE] could find them still held and get a 429. The
  // requests stay tracked until then, so a draining server still waits for those bytes.
  places_.release();
  return false;
}

void Generation::record(Choice& c, const StreamChunk& chunk) {
  const Clock::time_point now = Clock::now();
  if (!std::isnan(chunk.queue_seconds)) {
    // Queue time: from arrival (parsing, admission) until the engine first ran the request.
    context_.metrics.queue_time.observe(seconds(submitted_ - arrival_) + chunk.queue_seconds);
  }
  const auto k = static_cast<int64_t>(chunk.tokens.size());
  if (k > 0) {
    if (c.n_tokens == 0) {
      context_.metrics.time_to_first_token.observe(seconds(now - arrival_));
      c.first_token = now;
      if (k > 1) context_.metrics.inter_token_latency.observe(0.0, static_cast<uint64_t>(k - 1));
    } else {
      // Tokens that arrive together share the gap since the last ones.
      context_.metrics.inter_token_latency.observe(seconds(now - c.last_token) / static_cast<double>(k),
                                                   static_cast<uint64_t>(k));
    }
    c.last_token = now;
    c.n_tokens += k;
    context_.metrics.add_generated_tokens(k);
  }
  if (chunk.finished) {
    c.finished = true;
    if (request_finished(c.handle.id())) context_.admission.untrack(c.handle.id());
    context_.metrics.count_finished(chunk.finish_reason);
    context_.metrics.e2e_latency.observe(seconds(now - arrival_));
    if (c.n_tokens > 1) {
      context_.metrics.time_per_output_token.observe(seconds(c.last_token - c.first_token) /
                                                     static_cast<double>(c.n_tokens - 1));
    }
  }
}

}  // namespace lumen::server
