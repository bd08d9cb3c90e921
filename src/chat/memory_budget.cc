#include "chat/memory_budget.h"

#include <fmt/format.h>

#include "chat/runtime.h"

namespace lumen::chat {

namespace {
thread_local MemoryBudget* tls_budget = nullptr;

[[noreturn]] void refuse(size_t limit) {
  throw RenderRefused(fmt::format("the template built more values than its memory limit ({} MiB) allows", limit >> 20));
}
}  // namespace

void MemoryBudget::charge(size_t bytes) {
  require(bytes);
  held_ += bytes;
  if (held_ > peak_) peak_ = held_;
}

void MemoryBudget::require(size_t bytes) const {
  if (bytes > limit_ - held_) refuse(limit_);
}

MemoryBudget* current_budget() { return tls_budget; }

BudgetScope::BudgetScope(MemoryBudget& budget) : previous_(tls_budget) { tls_budget = &budget; }
BudgetScope::~BudgetScope() { tls_budget = previous_; }

void require_room(size_t n) {
  if (tls_budget) tls_budget->require(n);
}

void require_room(size_t count, size_t item_bytes) {
  if (!tls_budget) return;
  if (item_bytes != 0 && count > tls_budget->limit() / item_bytes) refuse(tls_budget->limit());
  tls_budget->require(count * item_bytes);
}

HeldBytes::HeldBytes(size_t bytes) {
  if (tls_budget == nullptr || bytes == 0) return;
  tls_budget->charge(bytes);
  bytes_ = bytes;
}

HeldBytes& HeldBytes::operator=(HeldBytes&& other) noexcept {
  if (this != &other) {
    release();
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void HeldBytes::release() noexcept {
  if (bytes_ != 0 && tls_budget != nullptr) tls_budget->credit(bytes_);
  bytes_ = 0;
}

}  // namespace lumen::chat
