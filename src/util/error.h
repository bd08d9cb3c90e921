#pragma once
// Lumen reports bad input (a broken file, a malformed request) with lumen::Error: one readable
// sentence that names what was wrong. Callers at the edge (CLI, server) catch it and turn it into
// an exit status or an HTTP error; nothing below them ever aborts the process on bad input.
#include <fmt/format.h>

#include <string>
#include <utility>

#include "lumen/error.h"  // the Error class; fail() builds one with fmt

namespace lumen {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> format, Args&&... args) {
  throw Error(fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace lumen
