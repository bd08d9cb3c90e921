#pragma once
// One memory budget per render over everything the template builds: strings (their bytes and
// client ranges), lists and dicts (their item arrays), charged when built or copied and given
// back when freed. Per-value checks alone do not bound a render: 200 lists of range(100000)
// each pass every check and together hold 1.3 GB. A value records what it charged, so sharing a
// list (containers are immutable and shared by pointer) costs nothing, and copying a string
// costs its bytes again, which is what the process really holds.
//
// The budget in force is the calling thread's (BudgetScope): the renderer opens one around the
// interpreter, so values built outside any render (the parsed template's literals, the
// conversation converted from JSON, bounded by the request's size) are not charged, and every
// value a render charges is freed before its scope closes.
#include <cstddef>
#include <utility>

namespace lumen::chat {

class MemoryBudget {
 public:
  explicit MemoryBudget(size_t limit) : limit_(limit) {}

  // Adds `bytes` to what the render holds; RenderRefused (nothing charged) past the limit.
  void charge(size_t bytes);
  void credit(size_t bytes) { held_ -= bytes < held_ ? bytes : held_; }
  // RenderRefused if `bytes` more could not be charged: for builders that would otherwise grow a
  // large array (e.g. [x] * n) before it becomes a value and is charged.
  void require(size_t bytes) const;

  size_t limit() const { return limit_; }
  size_t held() const { return held_; }
  size_t peak() const { return peak_; }

 private:
  size_t limit_;
  size_t held_ = 0;
  size_t peak_ = 0;
};

// The budget of the render running on this thread, or null outside a render.
MemoryBudget* current_budget();

// Makes `budget` the thread's budget until the scope ends (then the previous one again).
class BudgetScope {
 public:
  explicit BudgetScope(MemoryBudget& budget);
  ~BudgetScope();
  BudgetScope(const BudgetScope&) = delete;
  BudgetScope& operator=(const BudgetScope&) = delete;

 private:
  MemoryBudget* previous_;
};

// `n` more bytes would fit the thread's budget (none: always); RenderRefused otherwise.
void require_room(size_t n);
// The same for an array of `count` items of `item_bytes` each, without overflowing.
void require_room(size_t count, size_t item_bytes);

// For a builder that has just appended its `count`th item of `item_bytes`: checks the room at
// each power of two, so a runaway builder (a 16 MiB string split into 8 M parts) stops within
// about twice the budget, at the cost of a few checks.
inline void require_room_growing(size_t count, size_t item_bytes) {
  if ((count & (count - 1)) == 0) require_room(count, item_bytes);
}

// Bytes a value holds, charged to the thread's budget while it lives. Move-only: a copied
// value computes its own charge (its copy's real size), so callers construct a new one.
class HeldBytes {
 public:
  HeldBytes() = default;
  explicit HeldBytes(size_t bytes);
  HeldBytes(HeldBytes&& other) noexcept : bytes_(std::exchange(other.bytes_, 0)) {}
  HeldBytes& operator=(HeldBytes&& other) noexcept;
  HeldBytes(const HeldBytes&) = delete;
  HeldBytes& operator=(const HeldBytes&) = delete;
  ~HeldBytes() { release(); }

  size_t bytes() const { return bytes_; }

 private:
  void release() noexcept;
  size_t bytes_ = 0;  // what was charged: 0 when no budget was in force
};

}  // namespace lumen::chat
