#pragma once
// Memory for grammar caches shared by every compiled grammar of one engine. Each compiled
// grammar also has its own limit (CompiledGrammar::kCacheBudgetBytes), but an engine keeps many
// (one per schema its clients sent, engine/structured_output.h), so without a shared bound a
// client sending many schemas that enter many contexts could hold gigabytes of caches. Past the
// bound, masks are still right: they walk the vocabulary without a cache.
#include <atomic>
#include <cstddef>

namespace lumen::grammar {

class CacheBudget {
 public:
  explicit CacheBudget(size_t limit_bytes) : limit_(limit_bytes) {}

  // Whether there is room left (checked before a cache is built; the build then takes its
  // bytes whatever they are, so the limit is passed by at most one cache per thread).
  bool has_room() const { return used_.load() < limit_; }
  void take(size_t bytes) { used_.fetch_add(bytes); }
  void give_back(size_t bytes) { used_.fetch_sub(bytes); }
  size_t used() const { return used_.load(); }
  size_t limit() const { return limit_; }

 private:
  const size_t limit_;
  std::atomic<size_t> used_{0};
};

}  // namespace lumen::grammar
