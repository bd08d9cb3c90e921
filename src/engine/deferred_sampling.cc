// OutputProcessor's side of grammar masks computed off the loop thread (mask_workers.h): a
// sequence whose mask is not ready in time keeps its row of logits and sits out, so one
// request's slow grammar never holds the step of the others (issue 47).
//
// Nothing about the sequence changes while it waits: its K/V holds every token it has (its
// last row was computed), `awaiting_mask` keeps the scheduler off it, speculation proposes
// nothing for it (it has no uncomputed token), and the row it is sampled from later is the
// one its step computed, so the tokens are those it would have drawn on time.
#include <algorithm>
#include <string>

#include "engine/output_processor.h"

namespace lumen::engine {

namespace {

// Two workers: a slow mask holds one while the other serves the ordinary masks; more would
// only take cores from the forward pass.
constexpr unsigned kMaskWorkers = 2;

}  // namespace

MaskWorkers& OutputProcessor::workers() {
  if (!mask_workers) {
    mask_workers = std::make_unique<MaskWorkers>(kMaskWorkers, [this] {
      if (mask_ready_callback) mask_ready_callback();
    });
  }
  return *mask_workers;
}

void OutputProcessor::start_masks(const StepPlan& plan) {
  for (const ScheduledChunk& chunk : plan.chunks) {
    if (!chunk.samples) continue;
    const auto it = live.find(chunk.seq->id);
    if (it == live.end()) continue;
    Completion& c = *it->second;
    if (!c.sampler.has_mask() || c.mask_job) continue;
    c.mask_job = workers().submit(c.sampler, static_cast<size_t>(vocab_size), c.group->id);
  }
}

bool OutputProcessor::mask_ready_for(Completion& c, std::span<const float> row, bool may_defer) {
  if (!c.mask_job) return true;
  if (!may_defer) {
    // A draft's rows are verified together, each next mask after the token before it; a
    // sequence whose masks are slow has few drafts (speculation cuts them where the grammar
    // forbids, and its budget ends it), so this wait is bounded by one mask's budget.
    mask_workers->wait(*c.mask_job);
  } else if (!mask_workers->wait_until(*c.mask_job, mask_deadline)) {
    c.deferred_row.assign(row.begin(), row.end());
    c.seq.awaiting_mask = true;
    deferred.push_back(c.seq.id);
    ++n_deferred_samples;
    return false;
  }
  c.mask_job.reset();
  return true;
}

bool OutputProcessor::resume_deferred() {
  bool resumed = false;
  for (size_t i = 0; i < deferred.size();) {
    const uint64_t id = deferred[i];
    const auto it = live.find(id);
    if (it == live.end()) {  // it ended (an abort) while it waited
      deferred.erase(deferred.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    Completion& c = *it->second;
    if (c.mask_job && !mask_workers->done(*c.mask_job)) {
      ++i;
      continue;
    }
    deferred.erase(deferred.begin() + static_cast<std::ptrdiff_t>(i));
    c.mask_job.reset();
    c.seq.awaiting_mask = false;
    const std::vector<float> row = std::move(c.deferred_row);
    c.deferred_row = {};
    resumed = true;
    try {
      on_logits(c, row);
    } catch (const std::exception& e) {
      fail_request(id, std::string("processing the request's logits failed: ") + e.what());
    }
  }
  return resumed;
}

bool OutputProcessor::mask_job_running(const RequestGroup& g) const {
  return std::any_of(g.completions.begin(), g.completions.end(), [this](const std::unique_ptr<Completion>& c) {
    return c->mask_job && !mask_workers->done(*c->mask_job);
  });
}

}  // namespace lumen::engine
