#pragma once
// Whether a client has gone while its request is being served, so that the work for it (a
// generation, a relayed upstream exchange) stops.

namespace lumen::http {

// Whether the peer of `socket` has closed or reset the connection, or shut down its sending side
// (a client that half-closes while it waits for its answer counts as gone). Never blocks.
bool peer_hung_up(int socket);

}  // namespace lumen::http
