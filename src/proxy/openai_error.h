#pragma once
// The errors the proxy answers itself, in OpenAI's shape, as `lumen serve` writes them:
//   {"error": {"message": ..., "type": ..., "param": null, "code": ...}}
// (clients such as the openai SDK pick their exception from the status alone). An instance's own
// errors are relayed as the instance wrote them.
#include <httplib.h>

#include <string>
#include <string_view>

namespace lumen::proxy {

// OpenAI's `type` for a status: invalid_request_error, not_found_error, server_error...
std::string_view openai_error_type(int status);
std::string openai_error_body(int status, std::string_view message, std::string_view code);
// Sets the status and the JSON body (and Retry-After: 1 for a 503, which is always passing here).
void answer_error(httplib::Response& response, int status, std::string_view message, std::string_view code);

}  // namespace lumen::proxy
