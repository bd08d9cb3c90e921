#include "server/client_id.h"

#include <fmt/format.h>

#include <functional>

#include "http/http_policy.h"
#include "lumen/cache_salt.h"

namespace lumen::server {

std::string client_id(bool by_api_key, std::string_view authorization, std::string_view peer) {
  if (by_api_key) {
    if (auto token = http::bearer_token(authorization)) return fmt::format("key:{:016x}", cache_salt_of(*token));
  }
  return fmt::format("peer:{}", peer);
}

uint64_t engine_client(std::string_view client_id) { return std::hash<std::string_view>{}(client_id); }

}  // namespace lumen::server
