#include "chat/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "chat/py_string.h"
#include "util/error.h"

namespace lumen::chat {

const Value* DictData::find(std::string_view key) const {
  for (const auto& [k, v] : items) {
    if (k == key) return &v;
  }
  return nullptr;
}

int nested_depth(const Value& v) {
  if (v.is_namespace()) fail("a namespace cannot be stored inside another value");
  if (v.is_list()) return v.as_list().depth;
  if (v.is_dict()) return v.as_dict().depth;
  return 0;
}

namespace {
// What a shared_ptr'd container costs beyond its items: the control block and the struct.
template <typename T>
constexpr size_t kSharedBytes = sizeof(T) + 2 * sizeof(void*) + 16;

size_t string_heap_bytes(const std::string& s) {
  static const size_t inline_capacity = std::string().capacity();
  return s.capacity() > inline_capacity ? s.capacity() + 1 : 0;
}

int container_depth(int deepest_item) {
  if (deepest_item + 1 > kMaxValueDepth) fail("values nest more than {} levels deep", kMaxValueDepth);
  return deepest_item + 1;
}
}  // namespace

size_t StrData::heap_bytes() const { return string_heap_bytes(text) + taint.capacity() * sizeof(Taint::value_type); }

Value Value::list(std::vector<Value> items, bool tuple) {
  int deepest = 0;
  for (const auto& item : items) deepest = std::max(deepest, nested_depth(item));
  const size_t bytes = kSharedBytes<ListData> + items.capacity() * sizeof(Value);
  Value v;
  v.v_ =
      std::make_shared<const ListData>(ListData{std::move(items), tuple, container_depth(deepest), HeldBytes(bytes)});
  return v;
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items, bool client_keys) {
  int deepest = 0;
  size_t bytes = kSharedBytes<DictData> + items.capacity() * sizeof(items[0]);
  for (const auto& item : items) {
    deepest = std::max(deepest, nested_depth(item.second));
    bytes += string_heap_bytes(item.first);
  }
  Value v;
  v.v_ = std::make_shared<const DictData>(
      DictData{std::move(items), client_keys, container_depth(deepest), HeldBytes(bytes)});
  return v;
}

Value Value::client_text(std::string s) {
  Taint taint;
  if (!s.empty()) taint.emplace_back(0, s.size());
  return text(std::move(s), std::move(taint));
}

Value Value::callable(std::string name, std::function<Value(Runtime&, const CallArgs&)> fn) {
  return Value(std::make_shared<const CallableData>(CallableData{std::move(name), std::move(fn), false, nullptr}));
}

double Value::as_number() const {
  if (is_int()) return static_cast<double>(as_int());
  if (is_bool()) return as_bool() ? 1.0 : 0.0;
  return as_float();
}

std::string Value::type_name() const {
  if (is_undefined()) return "Undefined";
  if (is_none()) return "NoneType object";
  if (is_bool()) return "bool object";
  if (is_int()) return "int object";
  if (is_float()) return "float object";
  if (is_string()) return "str object";
  if (is_list()) return as_list().tuple ? "tuple object" : "list object";
  if (is_dict()) return "dict object";
  if (is_namespace()) return "Namespace object";
  return "function object";
}

bool truthy(const Value& v) {
  if (v.is_undefined() || v.is_none()) return false;
  if (v.is_bool()) return v.as_bool();
  if (v.is_int()) return v.as_int() != 0;
  if (v.is_float()) return v.as_float() != 0.0;
  if (v.is_string()) return !v.as_string().empty();
  if (v.is_list()) return !v.as_list().items.empty();
  if (v.is_dict()) return !v.as_dict().items.empty();
  return true;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_float() || b.is_float()) return a.as_number() == b.as_number();
    int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
    int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
    return x == y;
  }
  if (a.is_string() && b.is_string()) return a.as_string() == b.as_string();
  if (a.is_none() && b.is_none()) return true;
  // jinja2's Undefined equals only another Undefined.
  if (a.is_undefined() || b.is_undefined()) return a.is_undefined() && b.is_undefined();
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list();
    const auto& y = b.as_list();
    if (x.tuple != y.tuple || x.items.size() != y.items.size()) return false;
    for (size_t i = 0; i < x.items.size(); ++i) {
      if (!equals(x.items[i], y.items[i])) return false;
    }
    return true;
  }
  if (a.is_dict() && b.is_dict()) {
    const auto& x = a.as_dict();
    const auto& y = b.as_dict();
    if (x.items.size() != y.items.size()) return false;
    for (const auto& [k, v] : x.items) {
      const Value* other = y.find(k);
      if (!other || !equals(v, *other)) return false;
    }
    return true;
  }
  if (a.is_namespace() && b.is_namespace()) return &a.as_namespace() == &b.as_namespace();
  if (a.is_callable() && b.is_callable()) return &a.as_callable() == &b.as_callable();
  return false;
}

int compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (!a.is_float() && !b.is_float()) {
      int64_t x = a.is_bool() ? a.as_bool() : a.as_int();
      int64_t y = b.is_bool() ? b.as_bool() : b.as_int();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    double x = a.as_number(), y = b.as_number();
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) {
    // UTF-8 byte order equals code point order, which is how Python compares str.
    int c = a.as_string().compare(b.as_string());
    return c < 0 ? -1 : c > 0 ? 1 : 0;
  }
  if (a.is_list() && b.is_list()) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (!equals(x[i], y[i])) return compare(x[i], y[i]);
    }
    return x.size() < y.size() ? -1 : x.size() > y.size() ? 1 : 0;
  }
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("cannot compare {} with {}", a.type_name(), b.type_name());
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  // Shortest round-trip digits, then Python's layout rule: positional notation for decimal
  // exponents in [-4, 16), scientific with a two-digit-minimum exponent otherwise.
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);
  bool negative = sci[0] == '-';
  if (negative) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string digits = sci.substr(0, 1) + (e > 1 ? sci.substr(2, e - 2) : "");
  int exponent = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exponent >= -4 && exponent < 16) {
    if (exponent < 0) {
      out += "0.";
      out.append(static_cast<size_t>(-1 - exponent), '0');
      out += digits;
    } else {
      auto int_len = static_cast<size_t>(exponent) + 1;
      if (digits.size() <= int_len) {
        out += digits;
        out.append(int_len - digits.size(), '0');
        out += ".0";
      } else {
        out += digits.substr(0, int_len) + "." + digits.substr(int_len);
      }
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) {
    out += '.';
    out.append(digits, 1);
  }
  out += exponent < 0 ? "e-" : "e+";
  int mag = exponent < 0 ? -exponent : exponent;
  if (mag < 10) out += "0";
  out += std::to_string(mag);
  return out;
}

namespace {
std::string print(const Value& v, bool repr) {
  if (v.is_undefined()) return "";
  if (v.is_none()) return "None";
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_float()) return py_float_repr(v.as_float());
  if (v.is_string()) return repr ? py_repr_string(v.as_string()) : v.as_string();
  if (v.is_list()) {
    const auto& l = v.as_list();
    std::string out = l.tuple ? "(" : "[";
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out += ", ";
      out += print(l.items[i], true);
      check_built_size(out.size());
    }
    if (l.tuple && l.items.size() == 1) out += ",";
    return out + (l.tuple ? ")" : "]");
  }
  if (v.is_dict() || v.is_namespace()) {
    const auto& d = v.is_dict() ? v.as_dict() : v.as_namespace().attrs;
    std::string out = "{";
    for (size_t i = 0; i < d.items.size(); ++i) {
      if (i) out += ", ";
      out += py_repr_string(d.items[i].first) + ": " + print(d.items[i].second, true);
      check_built_size(out.size());
    }
    out += "}";
    return v.is_namespace() ? "<Namespace " + out + ">" : out;
  }
  return "<function " + v.as_callable().name + ">";
}
}  // namespace

std::string to_str(const Value& v) { return print(v, false); }
std::string to_repr(const Value& v) { return print(v, true); }

void fail_undefined(const Value& v) {
  const std::string& hint = v.is_undefined() ? v.as_undefined().hint : std::string();
  fail("{}", hint.empty() ? std::string("undefined value") : hint);
}

}  // namespace lumen::chat
