#pragma once
// body_refusal() (http_policy.h) for a request httplib has parsed the head of: the one place
// that reads the framing headers, for the request gate (request_gate.h) and the HTTP fuzz target.
#include <httplib.h>

#include <cstddef>
#include <optional>

#include "http/http_policy.h"

namespace lumen::http {

std::optional<BodyRefusal> body_refusal(const httplib::Request& request, size_t max_body_bytes);

}  // namespace lumen::http
