#pragma once
// Who a request comes from, for the per-client admission share (admission.h). With API keys
// the client is the tenant: its key (verified before routing), so one tenant's many
// connections share one share and tenants behind one proxy or NAT still get theirs. Without
// keys it is the peer address; clients behind one proxy then share one share, which is the
// conservative failure (the proxy is limited, not the server's other clients).
#include <cstdint>
#include <string>
#include <string_view>

namespace lumen::server {

// `authorization`: the request's Authorization header; `peer`: its remote address. The key
// appears only as a fingerprint, so the admission table holds no secrets.
std::string client_id(bool by_api_key, std::string_view authorization, std::string_view peer);

// The engine's key for a client id (Engine::add_request_n's `client`): its seats and prefill
// are shared fairly with other clients' (two ids that collide would merely share one share).
uint64_t engine_client(std::string_view client_id);

}  // namespace lumen::server
