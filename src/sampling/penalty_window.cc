#include "sampling/penalty_window.h"

#include "util/error.h"

namespace lumen::sampling {

namespace {
constexpr size_t kInitialSlots = 64;
}

PenaltyWindow::PenaltyWindow(int32_t last_n) : last_n_(last_n) {
  if (last_n < -1) fail("penalty window must be -1, 0 or positive (got {})", last_n);
}

size_t PenaltyWindow::home(int32_t token) const {
  // Fibonacci hashing: consecutive ids (common in real text) spread over the table.
  const uint64_t h = static_cast<uint64_t>(static_cast<uint32_t>(token)) * 0x9E3779B97F4A7C15ull;
  return static_cast<size_t>(h >> 32) & (slots_.size() - 1);
}

const PenaltyWindow::Entry* PenaltyWindow::find(int32_t token) const {
  if (slots_.empty()) return nullptr;
  const size_t mask = slots_.size() - 1;
  for (size_t i = home(token);; i = (i + 1) & mask) {
    if (slots_[i].token == token) return &slots_[i];
    if (slots_[i].token < 0) return nullptr;
  }
}

int32_t PenaltyWindow::count(int32_t token) const {
  const Entry* e = find(token);
  return e ? e->count : 0;
}

int32_t PenaltyWindow::output_count(int32_t token) const {
  const Entry* e = find(token);
  return e ? e->output_count : 0;
}

void PenaltyWindow::grow() {
  std::vector<Entry> old = std::move(slots_);
  slots_.assign(old.empty() ? kInitialSlots : old.size() * 2, Entry{});
  const size_t mask = slots_.size() - 1;
  for (const Entry& e : old) {
    if (e.token < 0) continue;
    size_t i = home(e.token);
    while (slots_[i].token >= 0) i = (i + 1) & mask;
    slots_[i] = e;
  }
}

void PenaltyWindow::add(int32_t token, bool is_output) {
  if ((used_ + 1) * 2 > slots_.size()) grow();
  const size_t mask = slots_.size() - 1;
  size_t i = home(token);
  while (slots_[i].token >= 0 && slots_[i].token != token) i = (i + 1) & mask;
  if (slots_[i].token < 0) {
    slots_[i] = Entry{token, 0, 0};
    ++used_;
  }
  ++slots_[i].count;
  if (is_output) ++slots_[i].output_count;
}

void PenaltyWindow::remove(int32_t token, bool is_output) {
  const size_t mask = slots_.size() - 1;
  size_t i = home(token);
  while (slots_[i].token != token) i = (i + 1) & mask;  // present: it is in the ring
  --slots_[i].count;
  if (is_output) --slots_[i].output_count;
  if (slots_[i].count > 0) return;
  // Backward-shift deletion: pull later entries of the probe run into the hole when the hole
  // lies on their way from their home slot, so lookups never need tombstones.
  for (size_t j = (i + 1) & mask; slots_[j].token >= 0; j = (j + 1) & mask) {
    const size_t k = home(slots_[j].token);
    const bool hole_on_path = i <= j ? (k <= i || k > j) : (k <= i && k > j);
    if (hole_on_path) {
      slots_[i] = slots_[j];
      i = j;
    }
  }
  slots_[i] = Entry{};
  --used_;
}

void PenaltyWindow::push(int32_t token, bool is_output) {
  if (token < 0) fail("token id {} is negative", token);
  if (last_n_ == 0) return;
  if (last_n_ > 0) {
    const auto window = static_cast<size_t>(last_n_);
    if (ring_.size() < window) {
      ring_.push_back({token, is_output});
    } else {
      const Recent oldest = ring_[head_];
      remove(oldest.token, oldest.is_output);
      ring_[head_] = {token, is_output};
      head_ = (head_ + 1) % window;
    }
  }
  add(token, is_output);
}

}  // namespace lumen::sampling
