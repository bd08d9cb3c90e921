#include "proxy/openai_error.h"

#include <string>

#include "http/error_response.h"

namespace lumen::proxy {

void answer_error(httplib::Response& response, int status, std::string_view message, std::string_view code) {
  http::ApiError error(status, std::string(message), "", std::string(code));
  if (status == 503) error.retry_after = 1;
  http::write_error(response, error);
}

}  // namespace lumen::proxy
