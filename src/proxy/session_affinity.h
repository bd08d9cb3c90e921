#pragma once
// Keeping a conversation on the same instances: a request that carries `X-Session-Id` (the
// header deploy/haproxy hashes on too) goes to the same prefill and decode instances as the
// session's earlier turns, so both prefix caches hit (the prefill instance computes only the new
// turn, the decode instance fetches only that). Rendezvous hashing: each instance's weight for a
// session is a hash of (session, instance), the highest wins, and adding or losing an instance
// moves only the sessions that were on it. A session never overloads its instance: past
// kAffinitySlack requests more in flight than the least busy one, the next in its order is taken.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace lumen::proxy {

inline constexpr const char* kSessionHeader = "X-Session-Id";
inline constexpr int64_t kAffinitySlack = 4;
inline constexpr size_t kMaxSessionIdBytes = 256;  // a longer one is ignored, not hashed

// The session's key (the same in every proxy process), or nothing without a usable header value.
std::optional<uint64_t> session_key(std::string_view header_value);
// The instance's weight for the session: the highest one is the session's first choice.
uint64_t rendezvous_weight(uint64_t session, size_t instance);

}  // namespace lumen::proxy
