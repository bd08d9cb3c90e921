#pragma once
// Prefix-cache salts (Engine::add_request's cache_salt): requests with different salts never
// share cached K/V. The server derives one from a client's `cache_salt` text and from its API
// key; the engine keys every salt again with a random per-process key before it reaches the
// block hashes, so these values are stable within a process and say nothing across processes.
#include <cstdint>
#include <string_view>

namespace lumen {

// A salt for `text`: never 0 (0 means "no salt").
uint64_t cache_salt_of(std::string_view text);

// One salt standing for both: requests share cached K/V only when both parts are equal.
uint64_t combine_cache_salts(uint64_t a, uint64_t b);

}  // namespace lumen
