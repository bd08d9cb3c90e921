#include "http/error_response.h"

#include <string>

namespace lumen::http {

void write_error(httplib::Response& response, const ApiError& error) {
  response.status = error.status();
  if (error.retry_after) response.set_header("Retry-After", std::to_string(*error.retry_after));
  response.set_content(dump_json(error.to_json()), "application/json");
}

ApiError library_error(int status) {
  switch (status) {
    case 404: return ApiError(404, "no such route", "", "not_found");
    case 413: return ApiError(413, "the request body is too large", "", "payload_too_large");
    case 414: return ApiError(414, "the request URI is too long", "", "uri_too_long");
    default: return ApiError(status, status >= 500 ? "internal server error" : "the request could not be read");
  }
}

}  // namespace lumen::http
