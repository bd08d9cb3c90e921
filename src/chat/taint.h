#pragma once
// Client-text tracking through a render. Precise where the bytes are easy to follow
// (concatenation, the output stream); everywhere else conservative: a result built from any
// client text is client text as a whole. Keeping the template's markers out of client ranges is
// what lets them become control tokens; putting client bytes in a template range never happens.
#include <string>

#include "chat/runtime.h"
#include "chat/value.h"

namespace lumen::chat {

// Appends `src` shifted by `offset` to `dst`, merging touching ranges.
void taint_append(Taint& dst, const Taint& src, size_t offset);

// Whether `v` holds client text anywhere (strings, client dict keys), recursively.
bool has_client_text(const Value& v);
bool has_client_text(const Value& subject, const CallArgs& args);

// A string under construction with its client ranges (the render output, a macro's output).
struct TaintedText {
  std::string text;
  Taint taint;
  void append(const std::string& s, const Taint& t) {
    taint_append(taint, t, text.size());
    text += s;
  }
  Value value() && { return Value::text(std::move(text), std::move(taint)); }
};

// What `{{ v }}` writes: a string's own ranges; any other value is printed, and the print is
// client text if the value holds any.
void append_printed(TaintedText& out, const Value& v);

// The conservative rule for operations that do not follow bytes: when `inputs_tainted`, a string
// result becomes client text whole, and so does each string directly in a list result.
Value taint_result(Value result, bool inputs_tainted);
// Whether taint_result could change `result` (a string, or a list with strings directly in it):
// callers skip the walk over the inputs otherwise.
bool may_carry_text(const Value& result);

}  // namespace lumen::chat
