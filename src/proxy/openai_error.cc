#include "proxy/openai_error.h"

#include <nlohmann/json.hpp>

namespace lumen::proxy {

std::string_view openai_error_type(int status) {
  switch (status) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return status >= 500 ? "server_error" : "invalid_request_error";
  }
}

std::string openai_error_body(int status, std::string_view message, std::string_view code) {
  const nlohmann::json body = {{"error",
                                {{"message", message},
                                 {"type", openai_error_type(status)},
                                 {"param", nullptr},
                                 {"code", code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code)}}}};
  // A message may quote bytes a client sent; never let invalid UTF-8 throw.
  return body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

void answer_error(httplib::Response& response, int status, std::string_view message, std::string_view code) {
  response.status = status;
  if (status == 503) response.set_header("Retry-After", "1");
  response.set_content(openai_error_body(status, message, code), "application/json");
}

}  // namespace lumen::proxy
