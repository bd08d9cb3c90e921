#include "grammar/stack_stepper.h"

#include <cstring>

namespace lumen::grammar {
namespace {

size_t hash_stack(Stack s) {
  uint64_t h = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(s.rest)) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<uint64_t>(static_cast<uint32_t>(s.pos)) * 0xC2B2AE3D27D4EB4Full;
  return static_cast<size_t>(h ^ (h >> 29));
}

}  // namespace

void StackStepper::begin_batch() {
  ++generation_;
  used_ = 0;
  overflow_ = false;
  if (generation_ == 0) {  // wrapped: old marks could look current
    for (Slot& slot : slots_) slot.generation = 0;
    generation_ = 1;
  }
}

bool StackStepper::visit(Stack s) {
  if (slots_.empty() || (used_ + 1) * 2 > slots_.size()) {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(old.empty() ? 64 : old.size() * 2, Slot{{0, nullptr}, 0});
    for (const Slot& slot : old) {
      if (slot.generation != generation_) continue;
      size_t mask = slots_.size() - 1;
      for (size_t i = hash_stack(slot.key) & mask;; i = (i + 1) & mask) {
        if (slots_[i].generation != generation_) {
          slots_[i] = slot;
          break;
        }
      }
    }
  }
  size_t mask = slots_.size() - 1;
  for (size_t i = hash_stack(s) & mask;; i = (i + 1) & mask) {
    if (slots_[i].generation != generation_) {
      slots_[i] = {s, generation_};
      ++used_;
      return true;
    }
    if (slots_[i].key == s) return false;
  }
}

void StackStepper::expand(int32_t pos, const StackNode* rest, NodeArena& arena, std::vector<Stack>& out,
                          bool& escaped) {
  const std::vector<Element>& elements = grammar_.elements;
  work_.push_back({pos, rest});
  while (!work_.empty()) {
    Stack s = work_.back();
    work_.pop_back();
    if (!visit(s)) continue;
    if (used_ > kMaxStepWork) {
      overflow_ = true;
      work_.clear();
      break;
    }
    const Element& e = elements[static_cast<size_t>(s.pos)];
    switch (e.kind) {
      case ElementKind::kChars:
        out.push_back(s);
        break;
      case ElementKind::kEnd:
        if (s.rest == nullptr) {
          if (visit({kAcceptedPos, nullptr})) out.push_back({kAcceptedPos, nullptr});
        } else if (s.rest == escape_node()) {
          escaped = true;
        } else {
          work_.push_back({s.rest->pos, s.rest->parent});
        }
        break;
      case ElementKind::kRuleRef: {
        // A reference that ends its alternative replaces the frame (a tail call): right
        // recursion such as `r ::= "a" r | ""` keeps the stack flat.
        int32_t next = s.pos + 1;
        const StackNode* below =
            elements[static_cast<size_t>(next)].kind == ElementKind::kEnd ? s.rest : arena.make(next, s.rest);
        const Rule& rule = grammar_.rules[e.rule];
        for (uint32_t a = rule.alternatives_end; a-- > rule.alternatives_begin;)
          work_.push_back({static_cast<int32_t>(grammar_.alternative_starts[a]), below});
        break;
      }
    }
  }
}

void StackStepper::initial_stacks(NodeArena& arena, std::vector<Stack>& out) {
  begin_batch();
  bool escaped = false;
  const Rule& root = grammar_.rules[grammar_.root];
  for (uint32_t a = root.alternatives_begin; a < root.alternatives_end; ++a)
    expand(static_cast<int32_t>(grammar_.alternative_starts[a]), nullptr, arena, out, escaped);
}

bool StackStepper::step_byte(std::span<const Stack> in, Utf8Partial& utf8, uint8_t byte, NodeArena& arena,
                             std::vector<Stack>& out, bool& escaped) {
  uint32_t cp = 0, lo = 0, hi = 0;
  Utf8Partial next = utf8;
  switch (utf8_step(next, byte, cp, lo, hi)) {
    case Utf8Step::kInvalid:
      return false;
    case Utf8Step::kPartial:
      if (work_meter_ != nullptr) work_meter_->charge(1 + in.size());
      for (const Stack& s : in)
        if (s.pos != kAcceptedPos && grammar_.may_match(static_cast<uint32_t>(s.pos), lo, hi)) out.push_back(s);
      break;
    case Utf8Step::kComplete:
      begin_batch();
      for (const Stack& s : in)
        if (s.pos != kAcceptedPos && grammar_.matches(static_cast<uint32_t>(s.pos), cp))
          expand(s.pos + 1, s.rest, arena, out, escaped);
      // Before the overflow check: a step that gave up still did its work.
      if (work_meter_ != nullptr) work_meter_->charge(1 + used_);
      if (overflow_) {
        out.clear();
        return false;
      }
      break;
  }
  utf8 = next;
  return true;
}

}  // namespace lumen::grammar
