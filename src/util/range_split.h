#pragma once
// Units [0, n) shared out among the workers of a parallel loop, each keeping to one contiguous
// run as long as it can: part p owns the p-th of `parts` equal ranges and takes its units from
// the front, a few at a time; a part whose range is empty takes units from the back of the
// range that has the most left, until no unit is left anywhere.
//
// Why. A decode step's matmuls stream their weights from memory, where a worker that jumps to a
// new region pays for a cold stream (hardware and software prefetches start over), so each
// worker should read one long run. But a split fixed in advance leaves the faster core idle
// while the slower one finishes, and cores differ: on the 2-core development host one of them
// streamed about 30% slower than the other through a whole profiling run (laptops mix fast and
// slow cores by design), and one traced SmolLM2 decode step spent 8% of its time in such tails
// (bench profile --trace). Taking from the back of the fullest range keeps both properties:
// long runs, and no core idle while any unit is left.
//
// Every unit is handed out exactly once (a compare-and-swap on the range's bounds), whatever the
// timing and even when one thread runs several parts.
#include <atomic>
#include <cstdint>
#include <memory>

namespace lumen {

class RangeSplit {
 public:
  static constexpr int64_t kMaxUnits = int64_t{1} << 31;

  // Splits [0, n_units) (0 <= n_units < kMaxUnits) into `parts` >= 1 ranges of nearly equal
  // length. Not concurrent with run().
  void reset(int64_t n_units, int parts);
  int parts() const { return parts_; }
  // The next unit part's own range hands out from its front (its first before run() starts).
  int64_t front(int part) const {
    return static_cast<int64_t>(ranges_[part].bounds.load(std::memory_order_relaxed) & 0xffffffffu);
  }

  // Calls fn(begin, end) for runs of at most `step` >= 1 units: part's own range from the front,
  // then, once it is empty, the fullest other range from the back, until no unit is left.
  // Safe to call from several threads at once, for different parts or the same one.
  template <typename Fn>
  void run(int part, int64_t step, Fn&& fn) {
    int64_t begin = 0, end = 0;
    while (take(part, step, false, begin, end)) fn(begin, end);
    for (int victim = fullest(); victim >= 0; victim = fullest()) {
      if (take(victim, step, true, begin, end)) fn(begin, end);
    }
  }

 private:
  // A range's bounds in one word, so that both ends move by compare-and-swap: front in the low
  // 32 bits, back in the high 32. A cache line each: the owner's claims stay in its own cache.
  struct alignas(64) Range {
    std::atomic<uint64_t> bounds{0};
  };
  static uint64_t pack(int64_t front, int64_t back) {
    return static_cast<uint64_t>(front) | static_cast<uint64_t>(back) << 32;
  }
  // Up to `step` units from the front (or back) of range `part` into [begin, end); false when
  // the range is empty.
  bool take(int part, int64_t step, bool from_back, int64_t& begin, int64_t& end);
  // The range with the most units left, or -1 when all are empty.
  int fullest() const;

  std::unique_ptr<Range[]> ranges_;
  int capacity_ = 0;
  int parts_ = 0;
};

}  // namespace lumen
