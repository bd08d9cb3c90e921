#include "grammar/grammar_matcher.h"

#include <algorithm>
#include <deque>

#include "grammar/compiled_grammar.h"

namespace lumen::grammar {

// The current state and the last max_rollback states are shared, immutable snapshots: a copy
// of the matcher copies pointers. Stack nodes live in arenas: the matcher's own (which only it
// appends to) and the arenas of the matchers it was copied from (kept alive, never touched).
struct GrammarMatcher::State {
  std::shared_ptr<const CompiledGrammar> compiled;
  std::shared_ptr<const MatchState> current;
  std::deque<std::shared_ptr<const MatchState>> history;
  int max_rollback = 64;
  MaskLimits limits;
  std::shared_ptr<MaskAllowance> allowance = std::make_shared<MaskAllowance>();
  std::shared_ptr<NodeArena> arena = std::make_shared<NodeArena>();
  std::vector<std::shared_ptr<const NodeArena>> kept_arenas;
  std::unique_ptr<MaskScratch> scratch;          // not copied: per matcher
  std::unique_ptr<StackStepper> stepper;         // idem
  std::vector<Stack> step_in, step_out;

  State(std::shared_ptr<const CompiledGrammar> c, int rollback)
      : compiled(std::move(c)),
        current(compiled->initial_state()),
        max_rollback(rollback),
        limits(MaskLimits::for_trie(compiled->vocabulary().trie().size())) {}

  State(const State& other)
      : compiled(other.compiled),
        current(other.current),
        history(other.history),
        max_rollback(other.max_rollback),
        limits(other.limits),
        allowance(other.allowance),
        kept_arenas(other.kept_arenas) {
    kept_arenas.push_back(other.arena);
  }

  StackStepper& get_stepper() {
    if (!stepper) stepper = std::make_unique<StackStepper>(compiled->grammar());
    return *stepper;
  }

  void push(std::shared_ptr<const MatchState> next) {
    history.push_back(std::move(current));
    if (static_cast<int>(history.size()) > max_rollback) history.pop_front();
    current = std::move(next);
  }

  bool advance(std::string_view bytes) {
    if (current->terminated) return false;
    NodeArena::Mark mark = arena->mark();
    StackStepper& s = get_stepper();
    step_in = current->stacks;
    Utf8Partial utf8 = current->utf8;
    for (char c : bytes) {
      step_out.clear();
      bool escaped = false;
      if (!s.step_byte(step_in, utf8, static_cast<uint8_t>(c), *arena, step_out, escaped) || step_out.empty()) {
        arena->reset(mark);
        return false;
      }
      std::swap(step_in, step_out);
    }
    auto next = std::make_shared<MatchState>();
    next->stacks = step_in;
    next->utf8 = utf8;
    push(std::move(next));
    return true;
  }
};

GrammarMatcher::GrammarMatcher(std::shared_ptr<const CompiledGrammar> grammar, int max_rollback)
    : state_(std::make_unique<State>(std::move(grammar), max_rollback < 0 ? 0 : max_rollback)) {}
GrammarMatcher::GrammarMatcher(const GrammarMatcher& other) : state_(std::make_unique<State>(*other.state_)) {}
GrammarMatcher& GrammarMatcher::operator=(const GrammarMatcher& other) {
  if (this != &other) state_ = std::make_unique<State>(*other.state_);
  return *this;
}
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;
GrammarMatcher::~GrammarMatcher() = default;

void GrammarMatcher::fill_next_token_bitmask(std::span<uint32_t> bitmask) {
  const CompiledGrammar& compiled = *state_->compiled;
  if (bitmask.size() != bitmask_words(compiled.vocabulary().size()))
    throw Error("fill_next_token_bitmask: the bitmask has " + std::to_string(bitmask.size()) + " words, the vocabulary needs " +
                std::to_string(bitmask_words(compiled.vocabulary().size())));
  if (!state_->scratch) {
    state_->scratch = std::make_unique<MaskScratch>(compiled.grammar(), state_->limits, compiled.shared_budget());
    state_->scratch->allowance = state_->allowance;
  }
  fill_token_mask(compiled, *state_->current, *state_->scratch, bitmask);
}

void GrammarMatcher::set_mask_limits(MaskLimits limits) {
  state_->limits = limits;
  state_->scratch.reset();  // made again, with the new limits, by the next mask
}

uint64_t GrammarMatcher::last_mask_work() const { return state_->scratch ? state_->scratch->work.used() : 0; }
uint64_t GrammarMatcher::total_mask_work() const { return state_->allowance->used.load(); }

void GrammarMatcher::share_mask_allowance(std::shared_ptr<MaskAllowance> allowance) {
  state_->allowance = std::move(allowance);
  if (state_->scratch) state_->scratch->allowance = state_->allowance;
}

bool GrammarMatcher::accept_token(int32_t token) {
  const TokenVocabulary& vocab = state_->compiled->vocabulary();
  if (token < 0 || static_cast<size_t>(token) >= vocab.size() || state_->current->terminated) return false;
  if (vocab.is_end_of_generation(token)) {
    if (!state_->current->can_terminate()) return false;
    auto next = std::make_shared<MatchState>(*state_->current);
    next->terminated = true;
    state_->push(std::move(next));
    return true;
  }
  if (!vocab.is_grammar_token(token)) return false;
  return state_->advance(vocab.token_bytes(token));
}

bool GrammarMatcher::accept_bytes(std::string_view bytes) { return state_->advance(bytes); }

void GrammarMatcher::rollback(int n_tokens) {
  if (n_tokens < 0 || n_tokens > static_cast<int>(state_->history.size()))
    throw Error("GrammarMatcher::rollback: " + std::to_string(n_tokens) + " steps asked, " +
                std::to_string(state_->history.size()) + " kept");
  for (int i = 0; i < n_tokens; ++i) {
    state_->current = std::move(state_->history.back());
    state_->history.pop_back();
  }
}

int GrammarMatcher::max_rollback() const { return state_->max_rollback; }
int GrammarMatcher::rollback_available() const { return static_cast<int>(state_->history.size()); }

bool GrammarMatcher::can_terminate() const { return state_->current->can_terminate(); }
bool GrammarMatcher::is_terminated() const { return state_->current->terminated; }

std::string GrammarMatcher::forced_continuation() const {
  // Tries every byte value: a byte is forced when it is the only one that keeps some stack
  // alive and the text cannot end here. Bounded length: forced runs are keys and punctuation.
  constexpr size_t kMaxForced = 256;
  const MatchState& state = *state_->current;
  std::string forced;
  if (state.terminated) return forced;
  ByteWalker walker(state_->compiled->grammar());
  // An ambiguous grammar makes each try cost many stacks: past a mask's work, or what is left
  // of the allowance its masks share (the engine asks at every step), what was found so far is
  // the answer (a jump-forward only saves steps; a shorter one is still right).
  const MaskLimits& limits = state_->limits;
  MaskAllowance& spent = *state_->allowance;
  const uint64_t allowance = limits.burst_work + spent.masks.load() * limits.sustained_work;
  MaskWork work;
  work.start(std::min(limits.work, allowance - std::min(spent.used.load(), allowance)));
  walker.count_work(&work);
  walker.reset(state.stacks, state.utf8);
  struct Tally {
    MaskAllowance& spent;
    const MaskWork& work;
    ~Tally() { spent.used.fetch_add(work.used()); }
  } tally{spent, work};
  try {
    while (forced.size() < kMaxForced) {
      bool ends_here = walker.top_utf8().remaining == 0;
      if (ends_here) {
        ends_here = false;
        for (const Stack& s : walker.top_stacks()) ends_here |= s.pos == kAcceptedPos;
      }
      if (ends_here) break;
      int only = -1;
      size_t depth = walker.depth();
      for (int b = 0; b < 256; ++b) {
        bool alive = walker.push(static_cast<uint8_t>(b));
        walker.pop_to(depth);
        if (!alive) continue;
        if (only >= 0) {
          only = -2;
          break;
        }
        only = b;
      }
      if (only < 0) break;
      walker.push(static_cast<uint8_t>(only));
      forced.push_back(static_cast<char>(only));
    }
  } catch (const GrammarBudgetError&) {
    walker.pop_to(forced.size());
  }
  // Only whole characters: a jump-forward must not stop inside one.
  while (!forced.empty() && walker.top_utf8().remaining != 0) {
    forced.pop_back();
    walker.pop_to(walker.depth() - 1);
  }
  return forced;
}

}  // namespace lumen::grammar
