#pragma once
// The routes' errors: the HTTP layer's OpenAI-shaped ApiError (http/api_error.h), named here
// unqualified because every route throws it, and the 400 that request validation throws.
#include <fmt/format.h>

#include <string>
#include <utility>

#include "http/api_error.h"

namespace lumen::server {

using http::ApiError;
using http::dump_json;

// A 400 naming the offending field.
template <typename... Args>
[[noreturn]] void invalid(const std::string& param, fmt::format_string<Args...> format, Args&&... args) {
  throw ApiError(400, fmt::format(format, std::forward<Args>(args)...), param);
}

}  // namespace lumen::server
