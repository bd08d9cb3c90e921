#include "grammar/compiled_grammar.h"

#include "grammar/byte_walker.h"
#include "grammar/stack_set_dfa.h"

namespace lumen::grammar {

bool MatchState::can_terminate() const {
  if (terminated || utf8.remaining != 0) return false;
  for (const Stack& s : stacks)
    if (s.pos == kAcceptedPos) return true;
  return false;
}

CompiledGrammar::CompiledGrammar(std::shared_ptr<const Grammar> grammar,
                                 std::shared_ptr<const TokenVocabulary> vocabulary,
                                 std::shared_ptr<CacheBudget> shared_budget)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)), shared_budget_(std::move(shared_budget)) {
  auto initial = std::make_shared<MatchState>();
  StackStepper(*grammar_).initial_stacks(initial_arena_, initial->stacks);
  initial_ = std::move(initial);
}

CompiledGrammar::~CompiledGrammar() {
  if (shared_budget_) shared_budget_->give_back(cache_bytes_);
}

void CompiledGrammar::context_key(const Stack& stack, ContextKey& key) {
  key.assign(reinterpret_cast<const char*>(&stack.pos), sizeof(int32_t));
  const StackNode* node = stack.rest;
  for (int i = 0; i < kContextFrames && node != nullptr; ++i, node = node->parent)
    key.append(reinterpret_cast<const char*>(&node->pos), sizeof(int32_t));
  // Whether the stack ends here matters: the cache of a whole stack has no escape (the text
  // may end where the start rule does), that of a stack's top does.
  if (node == nullptr) key.push_back('$');
}

const PositionCache* CompiledGrammar::context_cache(const Stack& stack, const ContextKey& key, StackSetDfa& dfa,
                                                    MaskWork& work) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = caches_.find(key);
    if (it != caches_.end()) return it->second.get();
    if (cache_bytes_ >= kCacheBudgetBytes) return nullptr;
    // The engine's caches are full: masks in new contexts walk the vocabulary uncached.
    if (shared_budget_ && !shared_budget_->has_room()) return nullptr;
  }
  // Built outside the lock: a sequence entering a new context does not stall the masks of
  // the others. Two threads that need the same new cache may both build it; the first one
  // stored is kept.
  std::unique_ptr<PositionCache> built = build_context_cache(stack, dfa, work);
  std::lock_guard<std::mutex> lock(mutex_);
  auto [it, inserted] = caches_.try_emplace(key);
  if (inserted) {
    const size_t bytes = built->bytes() + key.size() + 64;
    if (shared_budget_) shared_budget_->take(bytes);
    cache_bytes_ += bytes;
    it->second = std::move(built);
  }
  return it->second.get();
}

// Walks the whole token trie from the stack's top and kContextFrames frames, on escape_node()
// (unless the stack ends sooner). Per trie node (a prefix of some tokens):
//   alive                       -> its own tokens are accepted; go on into the children;
//   dead, nothing escaped       -> the whole subtree is rejected;
//   dead, escaped on the path   -> the subtree depends on the stack below: uncertain
//                                  (own tokens are accepted if the escape was at this byte:
//                                  the rule completed exactly at the token's end).
// Below this many tokens a subtree is walked: checking whether its state loops costs 128
// steps the first time.
constexpr uint32_t kMinSkippedTokens = 64;

// Inside a non-ASCII character from a state where every such character leads to the same
// state (a string's body, see StackSetDfa::non_ascii_target), the walk does not step the DFA,
// whose states hold the character's bits and would multiply by the thousand on a
// multilingual vocabulary: the trie knows whether the bytes so far are valid UTF-8, and the
// character leads to that state. Such a walk state is the target with this bit set.
constexpr uint32_t kMidCharacter = 1u << 31;
bool is_mid_character(uint32_t state) { return state != StackSetDfa::kDead && (state & kMidCharacter) != 0; }

StackSetDfa::Step next_state(StackSetDfa& dfa, const TokenVocabulary& vocab, uint32_t from, uint32_t node) {
  const uint8_t byte = vocab.trie()[node].byte;
  uint32_t target = from & ~kMidCharacter;
  if (!is_mid_character(from)) {
    if (byte < 0x80) return dfa.step(from, byte);
    target = dfa.non_ascii_target(from);
    if (target == StackSetDfa::kDead) return dfa.step(from, byte);
  }
  const TokenVocabulary::Utf8Prefix prefix = vocab.utf8_prefix(node);
  if (!prefix.valid) return {StackSetDfa::kDead, false};
  return {prefix.boundary ? target : target | kMidCharacter, false};
}

std::unique_ptr<PositionCache> CompiledGrammar::build_context_cache(const Stack& stack, StackSetDfa& dfa,
                                                                    MaskWork& work) const {
  const TokenVocabulary& vocab = *vocabulary_;
  const auto& trie = vocab.trie();
  const auto& ranks = vocab.ranks();
  auto cache = std::make_unique<PositionCache>();
  cache->accepted.assign(bitmask_words(vocab.size()), 0);
  auto accept = [&](uint32_t rank) {
    uint32_t id = static_cast<uint32_t>(ranks[rank]);
    cache->accepted[id >> 5] |= 1u << (id & 31);
  };
  std::vector<uint32_t> uncertain;
  // The context frames, copied onto escape_node() (the real ones sit on the rest of a stack),
  // in the DFA's own nodes: the same context is then the same DFA state.
  std::vector<int32_t> frames;
  const StackNode* frame = stack.rest;
  for (int i = 0; i < kContextFrames && frame != nullptr; ++i, frame = frame->parent) frames.push_back(frame->pos);
  // Half the byte limit: a build starting from a big DFA still has room to add its states.
  if (dfa.states() > kMaxDfaStates || dfa.bytes() > dfa.byte_limit() / 2) dfa.clear();
  const StackNode* below = frame == nullptr ? nullptr : escape_node();
  for (size_t i = frames.size(); i-- > 0;) below = dfa.node(frames[i], below);
  // The walk steps through the DFA of stack sets: one table lookup per trie node, the
  // matcher's own step only the first time a (stack set, byte) pair comes up.
  Stack start{stack.pos, below};
  constexpr uint32_t kNone = ~0u;
  std::vector<uint32_t> state = {dfa.start(std::span<const Stack>(&start, 1), {})};  // per depth
  std::vector<uint32_t> escape_depth = {kNone};  // shallowest escape on the path, per depth
  for (uint32_t i = 1; i < trie.size();) {
    const TokenVocabulary::TrieNode& node = trie[i];
    work.charge(1);
    const StackSetDfa::Step step = next_state(dfa, vocab, state[node.depth - 1u], i);
    const bool alive = step.next != StackSetDfa::kDead;
    if (node.depth >= state.size()) {
      state.resize(node.depth + 1u);
      escape_depth.resize(node.depth + 1u);
    }
    state[node.depth] = step.next;
    escape_depth[node.depth] = step.escaped ? node.depth : escape_depth[node.depth - 1u];
    uint32_t escape = escape_depth[node.depth];
    if (alive || escape == node.depth) {
      for (uint32_t r = node.tokens_begin; r < node.own_tokens_end; ++r) accept(r);
    } else if (escape != kNone) {
      for (uint32_t r = node.tokens_begin; r < node.own_tokens_end; ++r) uncertain.push_back(r);
    }
    if (alive && !is_mid_character(step.next)) {
      // Inside a loop over the bytes of the whole subtree (a string's body): every token
      // below is accepted, without a step.
      const TokenVocabulary::Below& below_node = vocab.below(i);
      if (node.subtree_tokens_end - node.own_tokens_end >= kMinSkippedTokens &&
          dfa.ascii_loop(step.next).contains(vocab.byte_sets()[below_node.ascii]) &&
          (!below_node.non_ascii || (below_node.utf8_valid && dfa.non_ascii_target(step.next) == step.next))) {
        for (uint32_t r = node.own_tokens_end; r < node.subtree_tokens_end; ++r) accept(r);
        i = node.subtree_end;
        continue;
      }
    }
    if (alive) {
      ++i;
      continue;
    }
    if (escape != kNone)
      for (uint32_t r = node.own_tokens_end; r < node.subtree_tokens_end; ++r) uncertain.push_back(r);
    i = node.subtree_end;
  }
  // Common prefixes between consecutive uncertain tokens, for the walk at mask time.
  cache->uncertain = std::move(uncertain);
  cache->uncertain_lcp.resize(cache->uncertain.size());
  for (size_t k = 0; k < cache->uncertain.size(); ++k) {
    if (k == 0) {
      cache->uncertain_lcp[k] = 0;
      continue;
    }
    const std::string& a = vocab.token_bytes(ranks[cache->uncertain[k - 1]]);
    const std::string& b = vocab.token_bytes(ranks[cache->uncertain[k]]);
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    cache->uncertain_lcp[k] = static_cast<uint16_t>(n);
  }
  return cache;
}

std::shared_ptr<const CompiledGrammar> compile_grammar(std::shared_ptr<const Grammar> grammar,
                                                       std::shared_ptr<const TokenVocabulary> vocabulary,
                                                       std::shared_ptr<CacheBudget> budget) {
  return std::make_shared<CompiledGrammar>(std::move(grammar), std::move(vocabulary), std::move(budget));
}

}  // namespace lumen::grammar
