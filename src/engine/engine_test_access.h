#pragma once
// Fault injection into a running engine, for tests only (not part of the public API): the
// faults that containment must survive (an exception while a request is processed, NaN
// logits) are otherwise hard to cause on purpose in one request of a batch; and the drafts of
// speculative decoding, which a test wants to choose.
#include <cstdint>
#include <functional>
#include <memory>
#include <span>

#include "engine/mask_workers.h"
#include "lumen/engine.h"
#include "spec/proposer.h"

namespace lumen {

// In namespace lumen (Engine's friend, which the public header names without engine::);
// tests call it engine::EngineTestAccess, as before.
struct EngineTestAccess {
  // Called in every step for each scheduled request with its logit rows (prompt log-probability
  // rows, then the sampling row) before they are checked and sampled. It may write into them or
  // throw; either fault is the request's own. An empty function removes the hook.
  using LogitsHook = std::function<void(uint64_t request_id, std::span<float> rows)>;
  static void set_logits_hook(Engine& engine, LogitsHook hook);
  // Speculative decoding with another proposer (one whose drafts the test chooses); the
  // engine's speculative config still decides who may speculate and how far. nullptr: off.
  static void set_proposer(Engine& engine, std::unique_ptr<spec::Proposer> proposer);
  // Called on the mask worker before each grammar mask is computed, with its request id: a test
  // blocks it to make one request's masks slow (mask_workers.h).
  static void set_mask_job_hook(Engine& engine, engine::MaskWorkers::JobHook hook);
  // Rows that came back reduced (engine/reduced_rows.h) get NaN logits after each step, as a
  // device that never copied them back leaves them: nothing may read them (a row brought back
  // whole is the real one, as from a device).
  static void set_poison_reduced_rows(Engine& engine, bool on);
  // Sampling rows that have come back as their argmax alone so far, as their leading
  // candidates, and reduced rows brought back whole after all.
  static uint64_t argmax_rows(const Engine& engine);
  static uint64_t leading_rows(const Engine& engine);
  static uint64_t rows_brought_back(const Engine& engine);
};

namespace engine {
using lumen::EngineTestAccess;
}

}  // namespace lumen
