#pragma once
// Lumen reports bad input (a broken file, a malformed request, invalid parameters) with
// lumen::Error: one readable sentence that names what was wrong. Nothing in Lumen aborts the
// process on bad input; the caller decides (an exit status, an HTTP error, a Python exception).
#include <stdexcept>
#include <string>

namespace lumen {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// The conversation, not the chat template, is at fault: the template refused it
// (raise_exception), or rendering it would pass a resource limit (a client error, where other
// rendering failures are the template's).
class ChatRefused : public Error {
 public:
  using Error::Error;
};

}  // namespace lumen
