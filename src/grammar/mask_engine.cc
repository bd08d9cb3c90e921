// The next-token mask. At a character boundary (the usual case) each stack's top position has
// a cache (compiled_grammar.h): its context-independent accepted tokens are OR-ed in as words,
// and only its uncertain tokens are walked against the real stacks, sharing prefixes. Inside a
// partial UTF-8 character (a token ended mid-character), or past the cache budget, the whole
// token trie is walked from the real stacks.
#include <algorithm>
#include <cstring>

#include "grammar/compiled_grammar.h"

namespace lumen::grammar {
namespace {

void set_bit(std::span<uint32_t> bitmask, int32_t id) {
  bitmask[static_cast<size_t>(id) >> 5] |= 1u << (static_cast<uint32_t>(id) & 31);
}
bool has_bit(std::span<const uint32_t> bitmask, int32_t id) {
  return (bitmask[static_cast<size_t>(id) >> 5] >> (static_cast<uint32_t>(id) & 31)) & 1u;
}

// Every token of the trie, from `stacks`.
void walk_trie(const TokenVocabulary& vocab, ByteWalker& walker, std::span<const Stack> stacks, Utf8Partial utf8,
               std::span<uint32_t> bitmask, MaskWork& work) {
  const auto& trie = vocab.trie();
  const auto& ranks = vocab.ranks();
  walker.reset(stacks, utf8);
  for (uint32_t i = 1; i < trie.size();) {
    const TokenVocabulary::TrieNode& node = trie[i];
    work.charge(1);
    walker.pop_to(node.depth - 1u);
    if (!walker.push(node.byte)) {
      i = node.subtree_end;
      continue;
    }
    for (uint32_t r = node.tokens_begin; r < node.own_tokens_end; ++r) set_bit(bitmask, ranks[r]);
    ++i;
  }
}

// The uncertain tokens of one position cache, from the stacks whose top is that position.
void walk_uncertain(const TokenVocabulary& vocab, const PositionCache& cache, ByteWalker& walker,
                    std::span<const Stack> stacks, std::span<uint32_t> bitmask, MaskWork& work) {
  const auto& ranks = vocab.ranks();
  walker.reset(stacks, {});
  // `valid`: how many bytes of the current token the walker's levels already hold (the common
  // prefix with the last token walked; skipped tokens lower it to the minimum on the way).
  size_t valid = 0;
  const size_t n = cache.uncertain.size();
  for (size_t k = 0; k < n; ++k) {
    valid = std::min<size_t>(valid, cache.uncertain_lcp[k]);
    int32_t id = ranks[cache.uncertain[k]];
    work.charge(1);
    if (has_bit(bitmask, id)) continue;
    const std::string& bytes = vocab.token_bytes(id);
    walker.pop_to(valid);
    bool alive = true;
    size_t d = valid;
    while (d < bytes.size()) {
      alive = walker.push(static_cast<uint8_t>(bytes[d]));
      ++d;
      if (!alive) break;
    }
    if (alive) {
      set_bit(bitmask, id);
      valid = bytes.size();
      continue;
    }
    // Dead after d bytes: every following token that shares those d bytes is dead too.
    valid = d - 1;
    while (k + 1 < n && cache.uncertain_lcp[k + 1] >= d) ++k;
  }
}

}  // namespace

void fill_token_mask(const CompiledGrammar& compiled, const MatchState& state, MaskScratch& scratch,
                     std::span<uint32_t> bitmask) {
  const TokenVocabulary& vocab = compiled.vocabulary();
  std::fill(bitmask.begin(), bitmask.end(), 0u);
  MaskAllowance& spent = *scratch.allowance;
  const uint64_t allowance = scratch.limits.burst_work + (spent.masks.fetch_add(1) + 1) * scratch.limits.sustained_work;
  const uint64_t left = allowance - std::min(spent.used.load(), allowance);
  scratch.work.start(std::min(scratch.limits.work, left), left < scratch.limits.work);
  if (scratch.shared_budget && !scratch.shared_budget->has_room() && scratch.charged_bytes > 0) scratch.dfa.clear();
  // Counted whether the mask comes back or throws.
  struct Tally {
    MaskScratch& scratch;
    ~Tally() {
      scratch.allowance->used.fetch_add(scratch.work.used());
      const size_t bytes = scratch.dfa.bytes();
      if (scratch.shared_budget) {
        if (bytes > scratch.charged_bytes)
          scratch.shared_budget->take(bytes - scratch.charged_bytes);
        else
          scratch.shared_budget->give_back(scratch.charged_bytes - bytes);
      }
      scratch.charged_bytes = bytes;
    }
  } tally{scratch};
  if (state.terminated) return;
  if (state.can_terminate())
    for (int32_t id : vocab.end_of_generation()) set_bit(bitmask, id);
  if (state.utf8.remaining != 0) {
    walk_trie(vocab, scratch.walker, state.stacks, state.utf8, bitmask, scratch.work);
    return;
  }
  // Group the stacks by cache key; OR in every group's accepted words first, so that the
  // uncertain walks skip what is already allowed.
  auto& keyed = scratch.keyed;
  keyed.resize(state.stacks.size());
  size_t n = 0;
  for (const Stack& s : state.stacks) {
    if (s.pos == kAcceptedPos) continue;
    CompiledGrammar::context_key(s, keyed[n].first);
    keyed[n++].second = s;
  }
  std::sort(keyed.begin(), keyed.begin() + static_cast<std::ptrdiff_t>(n),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::pair<size_t, const PositionCache*>> groups;  // (first index, cache)
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && keyed[j].first == keyed[i].first) ++j;
    scratch.work.charge(1 + (j - i));
    const PositionCache* cache = compiled.context_cache(keyed[i].second, keyed[i].first, scratch.dfa, scratch.work);
    if (cache != nullptr) {
      const uint32_t* words = cache->accepted.data();
      for (size_t w = 0; w < bitmask.size(); ++w) bitmask[w] |= words[w];
    }
    groups.push_back({i, cache});
    i = j;
  }
  for (auto [begin, cache] : groups) {
    scratch.group.clear();
    for (size_t k = begin; k < n && keyed[k].first == keyed[begin].first; ++k) scratch.group.push_back(keyed[k].second);
    if (cache == nullptr) {
      walk_trie(vocab, scratch.walker, scratch.group, {}, bitmask, scratch.work);
    } else if (!cache->uncertain.empty()) {
      walk_uncertain(vocab, *cache, scratch.walker, scratch.group, bitmask, scratch.work);
    }
  }
}

}  // namespace lumen::grammar
