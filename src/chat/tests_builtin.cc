// jinja2's built-in tests (`x is defined`, `x is string`, ...) with Python's type rules: a bool
// is a number, a string is iterable, an undefined value is iterable (it iterates as empty).
#include "chat/builtins.h"
#include "chat/py_string.h"
#include "util/error.h"

namespace lumen::chat {

namespace {

const Value& needs_arg(const CallArgs& a, std::string_view test) {
  const Value* v = a.get(0, "other");
  if (!v) fail("test '{}' needs an argument", test);
  return *v;
}

int64_t int_of(const Value& v, std::string_view test) {
  if (v.is_int()) return v.as_int();
  if (v.is_bool()) return v.as_bool();
  if (v.is_undefined()) fail_undefined(v);
  fail("test '{}' needs an integer, not {}", test, v.type_name());
}

bool contains_value(const Value& container, const Value& item) {
  if (container.is_string()) {
    if (!item.is_string()) fail("'in <string>' requires string as left operand, not {}", item.type_name());
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_dict()) return item.is_string() && container.as_dict().find(item.as_string());
  for (const auto& v : iterate(container)) {
    if (equals(v, item)) return true;
  }
  return false;
}

}  // namespace

bool value_in(const Value& item, const Value& container) { return contains_value(container, item); }

bool apply_test(Runtime&, std::string_view name, const Value& v, const CallArgs& a) {
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.is_bool();
  if (name == "true") return v.is_bool() && v.as_bool();
  if (name == "false") return v.is_bool() && !v.as_bool();
  if (name == "integer") return v.is_int();
  if (name == "float") return v.is_float();
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_undefined() || v.is_list() || v.is_dict() || v.is_string();
  if (name == "sequence") return v.is_list() || v.is_dict() || v.is_string();
  if (name == "callable") return v.is_callable();
  if (name == "sameas") {
    const Value& o = needs_arg(a, name);
    if (v.is_none() || o.is_none()) return v.is_none() && o.is_none();
    if (v.is_bool() || o.is_bool()) return v.is_bool() && o.is_bool() && v.as_bool() == o.as_bool();
    if (v.is_list() && o.is_list()) return &v.as_list() == &o.as_list();
    if (v.is_dict() && o.is_dict()) return &v.as_dict() == &o.as_dict();
    return v.is_int() == o.is_int() && v.is_string() == o.is_string() && equals(v, o);
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, needs_arg(a, name));
  if (name == "ne" || name == "!=") return !equals(v, needs_arg(a, name));
  if (name == "lt" || name == "lessthan" || name == "<") return compare(v, needs_arg(a, name)) < 0;
  if (name == "le" || name == "<=") return compare(v, needs_arg(a, name)) <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare(v, needs_arg(a, name)) > 0;
  if (name == "ge" || name == ">=") return compare(v, needs_arg(a, name)) >= 0;
  if (name == "in") return contains_value(needs_arg(a, name), v);
  if (name == "odd") return int_of(v, name) % 2 != 0;
  if (name == "even") return int_of(v, name) % 2 == 0;
  if (name == "divisibleby") {
    int64_t d = int_of(needs_arg(a, name), name);
    if (d == 0) fail("integer division or modulo by zero");
    return int_of(v, name) % d == 0;
  }
  if (name == "lower") return v.is_string() && ascii_lower(v.as_string()) == v.as_string();
  if (name == "upper") return v.is_string() && ascii_upper(v.as_string()) == v.as_string();
  if (name == "escaped") return false;
  fail("no test named '{}'", name);
}

}  // namespace lumen::chat
