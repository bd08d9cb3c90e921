#pragma once
// Writing an ApiError into an httplib response, and the error for a status httplib decided on
// by itself (no route matched, a URI too long, a request it could not parse).
#include <httplib.h>

#include "http/api_error.h"

namespace lumen::http {

// Sets the response's status, Retry-After (when the error has one) and OpenAI-shaped JSON body.
void write_error(httplib::Response& response, const ApiError& error);

// The error for a status httplib set itself, worded for a client.
ApiError library_error(int status);

}  // namespace lumen::http
