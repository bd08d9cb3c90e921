#pragma once
// The prefix cache's key for one full block: a 64-bit hash of (parent block's hash, cache salt,
// the block's tokens). Chaining through the parent makes the key stand for the whole prefix up to
// and including the block, so equal keys mean "same prefix" with high probability.
//
// The function is not cryptographic. A client choosing tokens could search for collisions, so the
// pool never trusts the key alone: a lookup also compares the stored salt, parent identity and
// tokens (see BlockPool::find_cached). A collision can cost a cache miss, never wrong K/V.
#include <cstdint>
#include <span>

namespace lumen::kv {

using BlockHash = uint64_t;

// The "parent hash" of a sequence's first block.
inline constexpr BlockHash kRootBlockHash = 0x6c756d656e2d6b76ULL;  // "lumen-kv"

// Bijective 64-bit finalizer (splitmix64's output function): every input bit flips about half of
// the output bits, which is what makes folding words in one at a time safe.
constexpr uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

// h = mix(mix(mix(parent ^ C) ^ salt) ^ w0) ... ^ length), where w_i packs two consecutive tokens
// into one 64-bit word (the tokens' full 32 bits each, so no two token lists share a word
// sequence) and the length closes the chain so [a] and [a, 0] differ. For a fixed word each step
// is a bijection of the running state, and for a fixed state a bijection of the word, so one step
// never merges two inputs that differ in only one of them.
BlockHash hash_block(BlockHash parent, uint64_t salt, std::span<const int32_t> tokens);

}  // namespace lumen::kv
