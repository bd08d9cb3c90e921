#pragma once
// The hand-over point between the engine's loop thread (which pushes tokens as they are sampled)
// and whoever consumes a request (a CLI, an HTTP connection thread, a Python iterator), which
// blocks until there is something new. Every method is thread-safe.
#include <cmath>
#include <condition_variable>
#include <limits>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "lumen/outputs.h"

namespace lumen {

// In namespace lumen, as RequestHandle (lumen/engine.h) names it.
class RequestStream {
 public:
  void push(GeneratedToken token) {
    {
      std::lock_guard lock(mutex_);
      pending_.push_back(std::move(token));
    }
    ready_.notify_all();
  }

  void set_prompt_logprobs(std::vector<PromptLogprob> logprobs) {
    {
      std::lock_guard lock(mutex_);
      prompt_logprobs_ = std::move(logprobs);
    }
    ready_.notify_all();
  }

  // When the request was first scheduled (the first call counts).
  void mark_scheduled(double queue_seconds) {
    std::lock_guard lock(mutex_);
    if (!queue_reported_ && std::isnan(queue_seconds_)) queue_seconds_ = queue_seconds;
  }

  void finish(FinishReason reason, const std::string& error = {}) {
    {
      std::lock_guard lock(mutex_);
      if (!finish_) {
        finish_ = reason;
        error_ = error;
      }
    }
    ready_.notify_all();
  }

  // Moves everything new into `out`, waiting for it first. False once the request has ended and
  // its last chunk (the one carrying the finish reason) was taken.
  bool next(StreamChunk& out) {
    std::unique_lock lock(mutex_);
    ready_.wait(lock, [this] { return has_news(); });
    return take(out);
  }

  // next() without the wait: false when there is nothing new (yet, or any more).
  bool try_next(StreamChunk& out) {
    std::lock_guard lock(mutex_);
    return has_news() && take(out);
  }

  bool finished() const {
    std::lock_guard lock(mutex_);
    return finish_.has_value();
  }

 private:
  bool has_news() const { return !pending_.empty() || !prompt_logprobs_.empty() || finish_.has_value(); }

  // With the lock held and has_news(): hands over what is new.
  bool take(StreamChunk& out) {
    out.tokens.clear();
    out.prompt_logprobs.clear();
    out.finished = false;
    out.error.clear();
    if (finish_delivered_) return false;
    out.tokens.swap(pending_);
    out.prompt_logprobs.swap(prompt_logprobs_);
    out.queue_seconds = std::numeric_limits<double>::quiet_NaN();
    if (!queue_reported_ && !std::isnan(queue_seconds_)) {
      out.queue_seconds = queue_seconds_;
      queue_reported_ = true;
    }
    if (finish_) {
      out.finished = true;
      out.finish_reason = *finish_;
      out.error = error_;
      finish_delivered_ = true;
    }
    return true;
  }

  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<GeneratedToken> pending_;
  std::vector<PromptLogprob> prompt_logprobs_;  // until taken
  double queue_seconds_ = std::numeric_limits<double>::quiet_NaN();
  bool queue_reported_ = false;
  std::optional<FinishReason> finish_;
  std::string error_;
  bool finish_delivered_ = false;
};

namespace engine {
using lumen::RequestStream;
}

}  // namespace lumen
