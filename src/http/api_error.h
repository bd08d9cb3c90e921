#pragma once
// An error an HTTP answer carries, in OpenAI's shape (`lumen serve` and the proxy alike):
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
// Every failure a client can cause is an ApiError with a 4xx status; only real internal faults
// become 5xx. Clients (the openai SDK) pick their exception class from the status code alone.
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>

namespace lumen::http {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}

  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // OpenAI's `type` for the status: invalid_request_error, authentication_error...
  std::string type() const;
  nlohmann::json to_json() const;
  // Seconds a client should wait before retrying (429 and 503): sent as Retry-After.
  std::optional<int> retry_after;

 private:
  int status_;
  std::string param_;
  std::string code_;
};

// Serializes for the wire. Invalid UTF-8 in any string (a token's bytes may be half a
// character) is replaced with U+FFFD rather than throwing.
std::string dump_json(const nlohmann::json& value);

}  // namespace lumen::http
