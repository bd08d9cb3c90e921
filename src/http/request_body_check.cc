#include "http/request_body_check.h"

#include <string>

namespace lumen::http {

std::optional<BodyRefusal> body_refusal(const httplib::Request& request, size_t max_body_bytes) {
  // httplib returns header values by value: keep them alive while the views point at them.
  const std::string content_length = request.get_header_value("Content-Length");
  const std::string transfer_encoding = request.get_header_value("Transfer-Encoding");
  const std::string content_encoding = request.get_header_value("Content-Encoding");
  BodyFraming framing;
  framing.method = request.method;
  framing.content_length_count = request.get_header_value_count("Content-Length");
  framing.content_length = content_length;
  framing.has_transfer_encoding = request.has_header("Transfer-Encoding");
  framing.transfer_encoding = transfer_encoding;
  framing.content_encoding = content_encoding;
  return body_refusal(framing, max_body_bytes);
}

}  // namespace lumen::http
