#pragma once
// The errors the proxy answers itself, in the OpenAI shape `lumen serve` uses (http/api_error.h).
// An instance's own errors are relayed as the instance wrote them.
#include <httplib.h>

#include <string_view>

namespace lumen::proxy {

// Sets the status and the JSON body, and Retry-After: 1 for a 503 (here always a passing state:
// a drain, or no instance reachable right now).
void answer_error(httplib::Response& response, int status, std::string_view message, std::string_view code);

}  // namespace lumen::proxy
