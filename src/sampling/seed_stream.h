#pragma once
// How a request's seed becomes the random stream of each of its sequences (n > 1 and best_of
// choices). Choice i draws from seed_of_choice(seed, i), not from seed + i: with a sum, the
// requests seeded 0 and 1 would share samples (seed 1's first choice would be seed 0's second).
// Mixing both through SplitMix64's finalizer (Steele, Lea and Flood, "Fast splittable
// pseudorandom number generators", 2014; a bijection on 64-bit words that spreads every input
// bit over the output) gives streams that no small change of seed or index maps onto another.
#include <cstdint>

namespace lumen::sampling {

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The generator seed of choice `index` of a request seeded with `seed`. Two (seed, index)
// pairs collide only if splitmix64(a) ^ splitmix64(b) == i ^ j, which for distinct seeds is a
// pseudorandom 64-bit word: for small indices, a chance of about indices / 2^64.
constexpr uint64_t seed_of_choice(uint64_t seed, uint64_t index) { return splitmix64(splitmix64(seed) ^ index); }

}  // namespace lumen::sampling
