#include "http/api_error.h"

namespace lumen::http {

std::string ApiError::type() const {
  switch (status_) {
    case 401: return "authentication_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 429: return "rate_limit_error";
    case 503: return "service_unavailable";
    default: return status_ >= 500 ? "server_error" : "invalid_request_error";
  }
}

nlohmann::json ApiError::to_json() const {
  nlohmann::json error = {{"message", what()}, {"type", type()}};
  error["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
  // OpenAI's code is a string or null, never the HTTP status.
  error["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
  return {{"error", std::move(error)}};
}

std::string dump_json(const nlohmann::json& value) {
  return value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace lumen::http
