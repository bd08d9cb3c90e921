#pragma once
// One step of the pushdown matcher: from a set of stacks, the set after one byte (through the
// UTF-8 state: a character moves the stacks once it is complete; a partial one only filters
// them by what it can still become).
#include <cstdint>
#include <span>
#include <vector>

#include "grammar/grammar_rules.h"
#include "grammar/mask_work.h"
#include "grammar/parse_stack.h"
#include "grammar/utf8_decode.h"

namespace lumen::grammar {

class StackStepper {
 public:
  explicit StackStepper(const Grammar& grammar) : grammar_(grammar) {}

  // The stacks where the start rule begins.
  void initial_stacks(NodeArena& arena, std::vector<Stack>& out);

  // Appends to `out` the stacks after `byte`; `utf8` is updated. Returns false for a byte no
  // UTF-8 text can have here (out unchanged). `escaped` is set when some stack completed the
  // rule sitting on escape_node() (used by the position caches).
  bool step_byte(std::span<const Stack> in, Utf8Partial& utf8, uint8_t byte, NodeArena& arena,
                 std::vector<Stack>& out, bool& escaped);

  // Expands `pos` (any element) over `rest` until every stack's top is a character set or
  // the end of the start rule; appends the results (no duplicates within one batch).
  void begin_batch();
  void expand(int32_t pos, const StackNode* rest, NodeArena& arena, std::vector<Stack>& out, bool& escaped);

  const Grammar& grammar() const { return grammar_; }

  // Every step_byte charges its work (stacks visited) here from now on; null: not counted.
  void count_work(MaskWork* work) { work_meter_ = work; }

  // An ambiguous grammar can multiply stacks with every character (`x ::= "a" x "b" | "a" x
  // "c" | ""` doubles them); past this many (pos, rest) pairs in one step the step fails, so a
  // hostile grammar costs bounded time per byte instead of exponential.
  static constexpr size_t kMaxStepWork = 1 << 16;

 private:
  bool visit(Stack s);

  const Grammar& grammar_;
  std::vector<Stack> work_;
  // Open-addressing set of the (pos, rest) pairs seen in this batch; `generation_` clears it.
  struct Slot {
    Stack key;
    uint32_t generation;
  };
  std::vector<Slot> slots_;
  uint32_t generation_ = 0;
  size_t used_ = 0;
  bool overflow_ = false;
  MaskWork* work_meter_ = nullptr;
};

}  // namespace lumen::grammar
