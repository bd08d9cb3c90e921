#pragma once
// Grammar masks computed off the engine's loop thread, so that a request whose grammar is slow to
// mask never holds the step everyone shares (issue 47).
//
// Each constrained sequence about to be sampled gets a job: its sampler's next mask
// (LogitMask::prepare), started beside the forward pass. The loop waits for a job only until a
// deadline shortly after that pass; a sequence whose mask is not ready by then keeps its row of
// logits and sits out (the scheduler skips it) until its job is done, while the others go on
// (OutputProcessor, deferred_sampling.cc).
//
// A few workers, not a thread per job: a slow mask holds one worker, the others keep serving the
// ordinary masks. Each job is bounded by its grammar's work budget (grammar/mask_work.h), so a
// worker is never held for long.
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "sampling/sampler.h"

namespace lumen::engine {

class MaskWorkers {
 public:
  // A submitted job; done() and wait_until() say when its mask is computed.
  class Ticket {
   private:
    friend class MaskWorkers;
    bool done = false;  // under the workers' mutex
  };
  using Clock = std::chrono::steady_clock;
  // Tests only: called on the worker with the job's request id before its mask is computed (a
  // test holds one request's masks back to see the others go on).
  using JobHook = std::function<void(uint64_t request_id)>;

  // `on_done` is called (on a worker, outside any lock) after each job: the engine's loop may
  // be asleep waiting for work, and a ready mask is work.
  MaskWorkers(unsigned n_workers, std::function<void()> on_done);
  // Finishes the jobs in progress; queued ones are dropped (nobody is left to wait for them).
  ~MaskWorkers();
  MaskWorkers(const MaskWorkers&) = delete;
  MaskWorkers& operator=(const MaskWorkers&) = delete;

  // Queues `sampler`'s next mask for rows of `vocab_size` logits. The sampler must stay alive,
  // and nothing else may use it, until the ticket is done.
  std::shared_ptr<const Ticket> submit(sampling::Sampler& sampler, size_t vocab_size, uint64_t request_id);
  bool done(const Ticket& ticket) const;
  // Whether the job is done, waiting for it until `deadline` at most.
  bool wait_until(const Ticket& ticket, Clock::time_point deadline) const;
  void wait(const Ticket& ticket) const;

  void set_job_hook(JobHook hook);

 private:
  struct Job {
    std::shared_ptr<Ticket> ticket;
    sampling::Sampler* sampler;
    size_t vocab_size;
    uint64_t request_id;
  };
  void work();

  const std::function<void()> on_done_;
  mutable std::mutex mutex_;
  std::condition_variable job_queued_;
  mutable std::condition_variable job_done_;
  std::deque<Job> queue_;
  JobHook hook_;
  bool stopping_ = false;
  std::vector<std::thread> workers_;  // last: they start once everything above exists
};

}  // namespace lumen::engine
