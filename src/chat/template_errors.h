#pragma once
// Whose fault a failed rendering is. A caller serving requests needs to know: a template that
// refuses a conversation (raise_exception: "roles must alternate") or a conversation too big for
// the interpreter's limits is the request's fault (400); any other failure is the template
// failing on input it should handle, the server's side (500). Both are lumen::Error, so callers
// that do not care catch them as before.
#include <string>

#include "util/error.h"

namespace lumen::chat {

// raise_exception() in the template: it refuses this conversation.
class TemplateRefusal : public Error {
 public:
  using Error::Error;
};

// A rendering limit (steps, output size, nesting, range size) was reached.
class TemplateLimitError : public Error {
 public:
  using Error::Error;
};

// The names a template's caller provides and that extra variables must not replace: the
// conversation, the tools, the special tokens, the flags, and the built-in functions.
bool is_reserved_template_name(const std::string& name);

}  // namespace lumen::chat
