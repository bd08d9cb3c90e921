#include "grammar/token_vocabulary.h"

#include <algorithm>
#include <limits>
#include <unordered_map>

#include "grammar/utf8_decode.h"
#include "lumen/error.h"

namespace lumen::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<bool> unusable,
                                 std::vector<int32_t> end_of_generation)
    : token_bytes_(std::move(token_bytes)), end_of_generation_(std::move(end_of_generation)) {
  const size_t n = token_bytes_.size();
  if (n > static_cast<size_t>(std::numeric_limits<int32_t>::max())) throw Error("vocabulary too large");
  if (!unusable.empty() && unusable.size() != n) throw Error("TokenVocabulary: unusable has the wrong size");
  end_of_generation_flags_.assign(n, false);
  for (int32_t id : end_of_generation_) {
    if (id < 0 || static_cast<size_t>(id) >= n) throw Error("TokenVocabulary: end-of-generation id out of range");
    end_of_generation_flags_[static_cast<size_t>(id)] = true;
  }
  grammar_token_.assign(n, false);
  for (size_t id = 0; id < n; ++id) {
    grammar_token_[id] = !end_of_generation_flags_[id] && !(unusable.empty() ? false : unusable[id]) &&
                         !token_bytes_[id].empty() && token_bytes_[id].size() < 0xFFFF;
    if (grammar_token_[id]) ranks_.push_back(static_cast<int32_t>(id));
  }
  // Sorted by unsigned bytes (std::string compares signed chars here), so that the trie's
  // preorder below is this order.
  std::sort(ranks_.begin(), ranks_.end(), [&](int32_t a, int32_t b) {
    const std::string& x = token_bytes_[static_cast<size_t>(a)];
    const std::string& y = token_bytes_[static_cast<size_t>(b)];
    int c = x.compare(y);  // compare() uses char_traits<char>, which compares as unsigned char
    return c != 0 ? c < 0 : a < b;
  });

  // Build the preorder trie from the sorted tokens: `path` holds the nodes of the previous
  // token's bytes; a token shares its longest common prefix with the previous one.
  trie_.push_back({0, 0, 0, 0, 0, 0});
  std::vector<uint32_t> path = {0};
  auto close = [&](uint32_t node) {
    trie_[node].subtree_end = static_cast<uint32_t>(trie_.size());
    trie_[node].subtree_tokens_end = static_cast<uint32_t>(ranks_.size());
  };
  const std::string* previous = nullptr;
  for (size_t rank = 0; rank < ranks_.size(); ++rank) {
    const std::string& bytes = token_bytes_[static_cast<size_t>(ranks_[rank])];
    size_t common = 0;
    if (previous != nullptr)
      while (common < previous->size() && common < bytes.size() && (*previous)[common] == bytes[common]) ++common;
    while (path.size() > common + 1) {
      // subtree_tokens_end must count only tokens placed so far: close with the current rank.
      trie_[path.back()].subtree_end = static_cast<uint32_t>(trie_.size());
      trie_[path.back()].subtree_tokens_end = static_cast<uint32_t>(rank);
      path.pop_back();
    }
    for (size_t d = common; d < bytes.size(); ++d) {
      uint32_t r = static_cast<uint32_t>(rank);
      trie_.push_back({0, r, r, 0, static_cast<uint16_t>(d + 1), static_cast<uint8_t>(bytes[d])});
      path.push_back(static_cast<uint32_t>(trie_.size() - 1));
    }
    trie_[path.back()].own_tokens_end = static_cast<uint32_t>(rank + 1);
    previous = &bytes;
  }
  while (!path.empty()) {
    close(path.back());
    path.pop_back();
  }
  summarize_subtree_bytes();
}

void TokenVocabulary::summarize_subtree_bytes() {
  const size_t n = trie_.size();
  std::vector<uint32_t> parent(n, 0);
  for (uint32_t i = 0; i < n; ++i)
    for (uint32_t c = i + 1; c < trie_[i].subtree_end; c = trie_[c].subtree_end) parent[c] = i;
  // Top down (preorder): whether the path from the root to each node is valid UTF-8 so far.
  std::vector<bool> valid(n, true);
  std::vector<Utf8Partial> utf8(n);
  for (uint32_t i = 1; i < n; ++i) {
    uint32_t cp = 0, lo = 0, hi = 0;
    Utf8Partial state = utf8[parent[i]];
    valid[i] = valid[parent[i]] && utf8_step(state, trie_[i].byte, cp, lo, hi) != Utf8Step::kInvalid;
    utf8[i] = state;
  }
  // Bottom up: children come after their parent in preorder, so a backward pass folds every
  // node into its parent.
  std::vector<ByteSet> ascii(n, ByteSet{{0, 0}});
  std::vector<bool> non_ascii(n, false), valid_below(n, true);
  for (uint32_t i = static_cast<uint32_t>(n); i-- > 1;) {
    const uint32_t p = parent[i];
    const uint8_t b = trie_[i].byte;
    if (b >= 0x80 || non_ascii[i]) non_ascii[p] = true;
    if (b < 0x80) ascii[p].bits[b >> 6] |= uint64_t{1} << (b & 63);
    ascii[p].bits[0] |= ascii[i].bits[0];
    ascii[p].bits[1] |= ascii[i].bits[1];
    if (!valid[i] || !valid_below[i]) valid_below[p] = false;
  }
  utf8_prefix_.resize(n);
  for (size_t i = 0; i < n; ++i) utf8_prefix_[i] = {static_cast<bool>(valid[i]), utf8[i].remaining == 0};
  below_.resize(n);
  std::unordered_map<std::string, uint32_t> ids;
  for (size_t i = 0; i < n; ++i) {
    std::string key(reinterpret_cast<const char*>(ascii[i].bits), sizeof ascii[i].bits);
    auto [it, inserted] = ids.try_emplace(key, static_cast<uint32_t>(byte_sets_.size()));
    if (inserted) byte_sets_.push_back(ascii[i]);
    below_[i] = {it->second, non_ascii[i], valid_below[i]};
  }
}

}  // namespace lumen::grammar
