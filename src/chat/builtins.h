#pragma once
// jinja2's built-in filters, tests, global functions, and the Python attribute semantics the
// templates rely on (dict keys and str / dict / list methods through `.name`). Each lives in
// its own file; this header is their common interface for the interpreter.
#include <optional>
#include <string>
#include <string_view>

#include "chat/runtime.h"
#include "chat/value.h"

namespace lumen::chat {

// `value | name(args)`; lumen::Error for an unknown filter.
Value apply_filter(Runtime& rt, std::string_view name, const Value& value, const CallArgs& args);

// `value is name(args)`; lumen::Error for an unknown test.
bool apply_test(Runtime& rt, std::string_view name, const Value& value, const CallArgs& args);

// `obj.name` as jinja2's sandbox resolves it: Python attribute (a method) first, then item.
Value get_attribute(const Value& obj, const std::string& name);

// `obj[key]`: item first, then attribute; missing gives an undefined value.
Value get_item(const Value& obj, const Value& key);

// `obj[start:stop:step]` with Python's slice rules on lists, tuples and strings.
Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Global functions: namespace, range, dict, raise_exception, strftime_now; nullopt if unknown.
std::optional<Value> global_function(std::string_view name);

// Python iteration: list items, dict keys, string characters; undefined iterates as empty.
std::vector<Value> iterate(const Value& v);

// Python's `item in container` (substring, list membership, dict key).
bool value_in(const Value& item, const Value& container);

// Python len(); lumen::Error for values without a length.
int64_t py_len(const Value& v);

}  // namespace lumen::chat
