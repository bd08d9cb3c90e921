#include "engine/mask_workers.h"

#include <exception>
#include <utility>

namespace lumen::engine {

MaskWorkers::MaskWorkers(unsigned n_workers, std::function<void()> on_done) : on_done_(std::move(on_done)) {
  workers_.reserve(n_workers);
  for (unsigned i = 0; i < n_workers; ++i) workers_.emplace_back([this] { work(); });
}

MaskWorkers::~MaskWorkers() {
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
    queue_.clear();
  }
  job_queued_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

std::shared_ptr<const MaskWorkers::Ticket> MaskWorkers::submit(sampling::Sampler& sampler, size_t vocab_size,
                                                               uint64_t request_id) {
  auto ticket = std::make_shared<Ticket>();
  {
    std::lock_guard lock(mutex_);
    queue_.push_back({ticket, &sampler, vocab_size, request_id});
  }
  job_queued_.notify_one();
  return ticket;
}

bool MaskWorkers::done(const Ticket& ticket) const {
  std::lock_guard lock(mutex_);
  return ticket.done;
}

bool MaskWorkers::wait_until(const Ticket& ticket, Clock::time_point deadline) const {
  std::unique_lock lock(mutex_);
  return job_done_.wait_until(lock, deadline, [&ticket] { return ticket.done; });
}

void MaskWorkers::wait(const Ticket& ticket) const {
  std::unique_lock lock(mutex_);
  job_done_.wait(lock, [&ticket] { return ticket.done; });
}

void MaskWorkers::set_job_hook(JobHook hook) {
  std::lock_guard lock(mutex_);
  hook_ = std::move(hook);
}

void MaskWorkers::work() {
  for (;;) {
    Job job;
    JobHook hook;
    {
      std::unique_lock lock(mutex_);
      job_queued_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      hook = hook_;
    }
    if (hook) hook(job.request_id);
    try {
      job.sampler->prepare_mask(job.vocab_size);
    } catch (const std::exception&) {
      // The mask keeps its failure (a grammar budget): the loop thread's apply() reports it as
      // that request's error.
    }
    {
      std::lock_guard lock(mutex_);
      job.ticket->done = true;
    }
    job_done_.notify_all();
    if (on_done_) on_done_();
  }
}

}  // namespace lumen::engine
