#pragma once
// Sends one streaming request over a cpp-httplib client and times its chunks as they arrive.
// Never throws: connection failures, HTTP errors and malformed streams become a failed
// RequestResult with the reason.
#include <httplib.h>

#include <string>

#include "benchmark/request_result.h"

namespace lumen::benchmark {

// A client failure in words a user can act on.
std::string describe_client_error(httplib::Error error);

RequestResult send_streaming_request(httplib::Client& client, const std::string& path, const httplib::Headers& headers,
                                     const std::string& body);

}  // namespace lumen::benchmark
