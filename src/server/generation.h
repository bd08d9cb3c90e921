#pragma once
// One HTTP request's work in the engine: one engine request of n choices per prompt, submitted
// together (choice index = prompt * n + j, drawing from seed + index when a seed is given; a
// prompt's n choices share its KV blocks). Reads their streams round-robin, records latency
// metrics as tokens arrive, and gives back everything it took (admission places, watcher
// registration, unfinished engine requests) when destroyed.
#include <chrono>
#include <cstdint>
#include <vector>

#include "lumen/engine.h"
#include "server/sampling_request.h"
#include "server/server_context.h"

namespace lumen::server {

using Clock = std::chrono::steady_clock;

class Generation {
 public:
  // Throws ApiError (400: a prompt too long for the context, or for max_tokens) or
  // lumen::Error (the engine refused the request), with nothing left queued. `places`: the
  // admission places the route reserved, one per sequence (prompts x best_of, or n), held until
  // this is destroyed. `socket`: the client's connection, watched for hang-ups (-1: not watched).
  Generation(ServerContext& context, const std::vector<std::vector<int32_t>>& prompts,
             const GenerationOptions& options, Endpoint endpoint, Clock::time_point arrival, int socket,
             Admission::Places places);
  ~Generation();
  Generation(const Generation&) = delete;
  Generation& operator=(const Generation&) = delete;

  size_t n_choices() const { return choices_.size(); }
  size_t prompt_of(size_t choice) const { return choices_[choice].prompt; }
  uint64_t request_id(size_t choice) const { return choices_[choice].handle.id(); }
  // Blocks for news from the next unfinished choice. False once every choice has finished; the
  // admission places are given back then (the requests stay tracked until this is destroyed).
  bool next(size_t& choice, StreamChunk& chunk);
  // Ends every unfinished choice (they finish with FinishReason::Abort).
  void abort_all();
  int64_t prompt_tokens() const { return prompt_tokens_; }
  int64_t completion_tokens() const;

 private:
  struct Choice {
    RequestHandle handle;
    size_t prompt;
    bool finished = false;
    int64_t n_tokens = 0;
    Clock::time_point first_token, last_token;
  };
  void record(Choice& choice, const StreamChunk& chunk);
  bool request_finished(uint64_t request_id) const;
  void release();

  ServerContext& context_;
  Clock::time_point arrival_;
  Clock::time_point submitted_;  // handed to the engine
  std::vector<Choice> choices_;
  Admission::Places places_;
  int64_t prompt_tokens_ = 0;
  size_t cursor_ = 0;
  uint64_t watch_ticket_ = 0;
};

}  // namespace lumen::server
