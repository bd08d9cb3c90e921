#pragma once
// Lookahead decoding's n-gram pool: n-grams the model produced in its own Jacobi iterations,
// kept by first token. A sequence whose last token is t drafts the tail of an n-gram starting
// with t. Per first token the pool keeps the `capacity` most recently seen distinct n-grams,
// most recent first (the paper's guess set of size G): what the model just produced is likelier
// to come again than what it produced long ago.
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

namespace lumen::spec {

class NgramPool {
 public:
  // Every n-gram has 1 + `tail` tokens (tail >= 1); `capacity` >= 1 per first token.
  NgramPool(int32_t tail, int32_t capacity) : tail_(tail), capacity_(capacity) {}

  // Records first, tail... (tail.size() must be the pool's tail length); an n-gram already held
  // becomes the most recent.
  void add(int32_t first, std::span<const int32_t> tail);
  // The tails of the n-grams starting with `first`, most recent first; each `tail` tokens long.
  // Valid until the next add().
  std::vector<std::span<const int32_t>> find(int32_t first) const;

  size_t n_ngrams() const;

 private:
  int32_t tail_;
  int32_t capacity_;
  // Per first token: up to capacity tails, flat, most recent first.
  std::unordered_map<int32_t, std::vector<int32_t>> tails_;
};

}  // namespace lumen::spec
