// Attribute and item access, slicing and iteration with Python's rules, and the str / dict /
// list methods templates call (`content.split('</think>')`, `message.items()`, ...). Methods
// that would mutate a container are refused, as HF's ImmutableSandboxedEnvironment refuses them.
#include <algorithm>
#include <array>

#include "chat/builtins.h"
#include "chat/py_string.h"
#include "chat/taint.h"
#include "util/error.h"

namespace lumen::chat {

namespace {

std::optional<std::string> opt_string(const Value* v, std::string_view what) {
  if (!v || v->is_none()) return std::nullopt;
  if (!v->is_string()) fail("{} must be a string, not {}", what, v->type_name());
  return v->as_string();
}

int64_t int_arg(const Value* v, int64_t fallback, std::string_view what) {
  if (!v || v->is_none()) return fallback;
  if (v->is_int()) return v->as_int();
  if (v->is_bool()) return v->as_bool();
  fail("{} must be an integer, not {}", what, v->type_name());
}

Value string_list(std::vector<std::string> parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (auto& p : parts) items.emplace_back(std::move(p));
  return Value::list(std::move(items));
}

bool affix_match(const std::string& s, const Value& arg, bool prefix) {
  auto one = [&](const Value& a) {
    if (!a.is_string()) fail("{}with arg must be str or a tuple of str", prefix ? "starts" : "ends");
    const std::string& x = a.as_string();
    if (x.size() > s.size()) return false;
    return prefix ? s.compare(0, x.size(), x) == 0 : s.compare(s.size() - x.size(), x.size(), x) == 0;
  };
  if (arg.is_list()) {
    for (const auto& a : arg.as_list().items) if (one(a)) return true;
    return false;
  }
  return one(arg);
}

// Python str.find / rfind / count on code points (byte offsets converted back).
int64_t cp_index(const std::string& s, size_t byte_pos) {
  return static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, byte_pos)));
}

// str.format with plain replacement fields: {}, {0}, {name}, and {{ / }} escapes. Format
// specs and conversions ({:>8}, {!r}) are refused rather than guessed.
std::string py_format(const std::string& s, const CallArgs& a) {
  std::string out;
  size_t auto_index = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    if (c == '}') {
      if (i + 1 < s.size() && s[i + 1] == '}') ++i;
      else fail("single '}}' encountered in format string");
      out += '}';
    } else if (c != '{') {
      out += c;
    } else if (i + 1 < s.size() && s[i + 1] == '{') {
      out += '{';
      ++i;
    } else {
      size_t close = s.find('}', i);
      if (close == std::string::npos) fail("single '{{' encountered in format string");
      std::string field = s.substr(i + 1, close - i - 1);
      if (field.find_first_of(":!.[") != std::string::npos) fail("str.format field '{}' is not supported", field);
      const Value* v = nullptr;
      if (field.empty()) {
        v = a.get(auto_index++, "");
      } else if (field.find_first_not_of("0123456789") == std::string::npos && field.size() < 6) {
        v = a.get(static_cast<size_t>(std::stoul(field)), "");
      } else {
        for (const auto& [k, x] : a.keyword) if (k == field) v = &x;
      }
      if (!v) fail("str.format has no argument for '{{{}}}'", field);
      out += to_str(*v);
      check_built_size(out.size());
      i = close;
    }
  }
  return out;
}

Value string_method(const std::string& s, std::string_view name, const CallArgs& a) {
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    a.expect_at_most(name, 1, {});
    return Value(py_strip(s, opt_string(a.get(0, ""), "chars"), name != "rstrip", name != "lstrip"));
  }
  if (name == "split" || name == "rsplit") {
    a.expect_at_most(name, 2, {"sep", "maxsplit"});
    auto sep = opt_string(a.get(0, "sep"), "sep");
    if (sep && sep->empty()) fail("empty separator");
    int64_t maxsplit = int_arg(a.get(1, "maxsplit"), -1, "maxsplit");
    return string_list(name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
  }
  if (name == "startswith" || name == "endswith") {
    a.expect_at_most(name, 1, {});
    const Value* arg = a.get(0, "");
    if (!arg) fail("{}() takes at least 1 argument", name);
    return Value(affix_match(s, *arg, name == "startswith"));
  }
  if (name == "upper") return Value(ascii_upper(s));
  if (name == "lower") return Value(ascii_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "replace") {
    a.expect_at_most(name, 3, {"count"});
    auto from = opt_string(a.get(0, ""), "old");
    auto to = opt_string(a.get(1, ""), "new");
    if (!from || !to) fail("replace() takes at least 2 arguments");
    return Value(py_replace(s, *from, *to, int_arg(a.get(2, "count"), -1, "count")));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    a.expect_at_most(name, 1, {});
    auto sub = opt_string(a.get(0, ""), "sub");
    if (!sub) fail("{}() takes at least 1 argument", name);
    if (name == "count") {
      if (sub->empty()) return Value(static_cast<int64_t>(code_point_count(s)) + 1);
      int64_t n = 0;
      for (size_t p = s.find(*sub); p != std::string::npos; p = s.find(*sub, p + sub->size())) ++n;
      return Value(n);
    }
    size_t p = name == "find" ? s.find(*sub) : s.rfind(*sub);
    return Value(p == std::string::npos ? int64_t{-1} : cp_index(s, p));
  }
  if (name == "join") {
    a.expect_at_most(name, 1, {});
    const Value* items = a.get(0, "");
    if (!items) fail("join() takes exactly one argument");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(*items)) {
      if (!item.is_string()) fail("sequence item: expected str instance, {} found", item.type_name());
      if (!first) out += s;
      first = false;
      out += item.as_string();
      check_built_size(out.size());
    }
    return Value(std::move(out));
  }
  if (name == "splitlines") return string_list(py_splitlines(s));
  if (name == "format") return Value(py_format(s, a));
  auto all_of = [&](auto pred) {
    if (s.empty()) return Value(false);
    return Value(std::all_of(s.begin(), s.end(), pred));
  };
  if (name == "isdigit") return all_of([](char c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") {
    return all_of([](char c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; });
  }
  if (name == "isspace") {
    return all_of([](char c) { return c == ' ' || (c >= '\t' && c <= '\r'); });
  }
  fail("str method '{}' is not supported", name);
}

Value dict_method(const Value& self, std::string_view name, const CallArgs& a) {
  const DictData& d = self.as_dict();
  if (name == "items" || name == "keys" || name == "values") {
    a.expect_at_most(name, 0, {});
    std::vector<Value> out;
    for (const auto& [k, v] : d.items) {
      Value key = d.client_keys ? Value::client_text(k) : Value(k);
      if (name == "items") out.push_back(Value::list({key, v}, true));
      else out.push_back(name == "keys" ? key : v);
    }
    return Value::list(std::move(out));
  }
  if (name == "get") {
    a.expect_at_most(name, 2, {});
    const Value* key = a.get(0, "");
    if (!key) fail("get expected at least 1 argument");
    const Value* found = key->is_string() ? d.find(key->as_string()) : nullptr;
    if (found) return *found;
    const Value* fallback = a.get(1, "");
    return fallback ? *fallback : Value(None{});
  }
  fail("dict method '{}' is not supported (templates may not modify their inputs)", name);
}

Value list_method(const Value& self, std::string_view name, const CallArgs& a) {
  const auto& items = self.as_list().items;
  if (name == "index" || name == "count") {
    a.expect_at_most(name, 1, {});
    const Value* x = a.get(0, "");
    if (!x) fail("{}() takes exactly one argument", name);
    int64_t n = 0;
    for (size_t i = 0; i < items.size(); ++i) {
      if (!equals(items[i], *x)) continue;
      if (name == "index") return Value(static_cast<int64_t>(i));
      ++n;
    }
    if (name == "index") fail("value is not in list");
    return Value(n);
  }
  fail("list method '{}' is not supported (templates may not modify their inputs)", name);
}

constexpr std::array<std::string_view, 27> kStrMethods = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "startswith", "endswith", "upper", "lower",
    "title", "capitalize", "replace", "find", "rfind", "count", "join", "splitlines", "isdigit",
    "isalpha", "isspace", "format", "zfill", "center", "ljust", "rjust", "encode", "index"};
constexpr std::array<std::string_view, 11> kDictMethods = {
    "items", "keys", "values", "get", "pop", "popitem", "update", "setdefault", "clear", "copy",
    "fromkeys"};
constexpr std::array<std::string_view, 11> kListMethods = {
    "index", "count", "append", "extend", "insert", "pop", "remove", "reverse", "sort", "clear",
    "copy"};

template <size_t N>
bool contains(const std::array<std::string_view, N>& names, std::string_view name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

Value bound(const Value& self, const std::string& name,
            Value (*method)(const Value&, std::string_view, const CallArgs&)) {
  auto data = std::make_shared<CallableData>();
  data->name = name;
  data->fn = [self, name, method](Runtime&, const CallArgs& a) { return method(self, name, a); };
  data->self = std::make_shared<const Value>(self);
  return Value(Value::CallablePtr(std::move(data)));
}

Value str_method_entry(const Value& self, std::string_view name, const CallArgs& a) {
  return string_method(self.as_string(), name, a);
}

std::string missing_attribute(const Value& obj, std::string_view name) {
  return fmt::format("'{}' has no attribute '{}'", obj.type_name(), name);
}

}  // namespace

Value get_attribute(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) fail_undefined(obj);
  if (!name.empty() && name[0] == '_') fail("access to attribute '{}' is unsafe", name);
  if (obj.is_dict()) {
    if (contains(kDictMethods, name)) return bound(obj, name, dict_method);
    if (const Value* v = obj.as_dict().find(name)) return *v;
  } else if (obj.is_namespace()) {
    if (const Value* v = obj.as_namespace().attrs.find(name)) return *v;
  } else if (obj.is_string()) {
    if (contains(kStrMethods, name)) return bound(obj, name, str_method_entry);
  } else if (obj.is_list()) {
    if (contains(kListMethods, name)) return bound(obj, name, list_method);
  }
  return Value::undefined(missing_attribute(obj, name));
}

Value get_item(const Value& obj, const Value& key) {
  if (obj.is_undefined()) fail_undefined(obj);
  if ((obj.is_list() || obj.is_string()) && (key.is_int() || key.is_bool())) {
    int64_t i = key.is_int() ? key.as_int() : key.as_bool();
    if (obj.is_list()) {
      auto n = static_cast<int64_t>(obj.as_list().items.size());
      if (i < 0) i += n;
      if (i >= 0 && i < n) return obj.as_list().items[static_cast<size_t>(i)];
    } else {
      auto offsets = code_point_offsets(obj.as_string());
      auto n = static_cast<int64_t>(offsets.size()) - 1;
      if (i < 0) i += n;
      if (i >= 0 && i < n) {
        auto k = static_cast<size_t>(i);
        return taint_result(Value(obj.as_string().substr(offsets[k], offsets[k + 1] - offsets[k])),
                            !obj.taint().empty());
      }
    }
    return Value::undefined(fmt::format("'{}' has no element {}", obj.type_name(), to_str(key)));
  }
  if (key.is_string()) {
    const DictData* d = obj.is_dict() ? &obj.as_dict()
                        : obj.is_namespace() ? &obj.as_namespace().attrs : nullptr;
    if (d) {
      if (const Value* v = d->find(key.as_string())) return *v;
    }
    if (obj.is_dict() || obj.is_string() || obj.is_list()) return get_attribute(obj, key.as_string());
    return Value::undefined(missing_attribute(obj, key.as_string()));
  }
  return Value::undefined(fmt::format("'{}' has no element {}", obj.type_name(), to_repr(key)));
}

Value get_slice(const Value& obj, const Value& start, const Value& stop, const Value& step) {
  if (obj.is_undefined()) fail_undefined(obj);
  auto as_opt = [](const Value& v, const char* what) -> std::optional<int64_t> {
    if (v.is_undefined() || v.is_none()) return std::nullopt;
    if (v.is_int()) return v.as_int();
    if (v.is_bool()) return v.as_bool();
    fail("slice {} must be an integer or None", what);
  };
  std::optional<int64_t> b = as_opt(start, "start"), e = as_opt(stop, "stop"), s = as_opt(step, "step");
  int64_t st = s.value_or(1);
  if (st == 0) fail("slice step cannot be zero");
  std::vector<size_t> offsets;
  int64_t n;
  if (obj.is_list()) {
    n = static_cast<int64_t>(obj.as_list().items.size());
  } else if (obj.is_string()) {
    offsets = code_point_offsets(obj.as_string());
    n = static_cast<int64_t>(offsets.size()) - 1;
  } else {
    fail("'{}' is not subscriptable", obj.type_name());
  }
  // Python's PySlice_AdjustIndices.
  auto adjust = [&](std::optional<int64_t> v, int64_t dflt) {
    if (!v) return dflt;
    int64_t x = *v;
    if (x < 0) {
      x += n;
      if (x < 0) x = st < 0 ? -1 : 0;
    } else if (x >= n) {
      x = st < 0 ? n - 1 : n;
    }
    return x;
  };
  int64_t lo = adjust(b, st < 0 ? n - 1 : 0), hi = adjust(e, st < 0 ? -1 : n);
  std::vector<size_t> picks;
  for (int64_t i = lo; st > 0 ? i < hi : i > hi; i += st) {
    picks.push_back(static_cast<size_t>(i));
    require_room_growing(picks.size(), sizeof(size_t) + sizeof(Value));
  }
  if (obj.is_list()) {
    const auto& items = obj.as_list().items;
    if (st == 1) {
      return Value::list(std::vector<Value>(items.begin() + static_cast<ptrdiff_t>(picks.empty() ? 0 : picks.front()),
                                            items.begin() + static_cast<ptrdiff_t>(picks.empty() ? 0 : picks.back() + 1)),
                         obj.as_list().tuple);
    }
    std::vector<Value> out;
    for (size_t i : picks) out.push_back(items[i]);
    return Value::list(std::move(out), obj.as_list().tuple);
  }
  const std::string& str = obj.as_string();
  const bool tainted = !obj.taint().empty();
  if (st == 1) {
    if (picks.empty()) return Value(std::string());
    return taint_result(Value(str.substr(offsets[picks.front()], offsets[picks.back() + 1] - offsets[picks.front()])),
                        tainted);
  }
  std::string out;
  for (size_t i : picks) out += str.substr(offsets[i], offsets[i + 1] - offsets[i]);
  return taint_result(Value(std::move(out)), tainted);
}

std::vector<Value> iterate(const Value& v) {
  if (v.is_undefined()) return {};
  if (v.is_list()) return v.as_list().items;
  if (v.is_dict()) {
    std::vector<Value> keys;
    for (const auto& [k, x] : v.as_dict().items) keys.push_back(v.as_dict().client_keys ? Value::client_text(k) : Value(k));
    return keys;
  }
  if (v.is_string()) {
    std::vector<Value> chars;
    auto offsets = code_point_offsets(v.as_string());
    const bool tainted = !v.taint().empty();
    for (size_t i = 0; i + 1 < offsets.size(); ++i) {
      require_room_growing(i + 1, sizeof(Value));
      Value c(v.as_string().substr(offsets[i], offsets[i + 1] - offsets[i]));
      chars.push_back(tainted ? Value::client_text(c.as_string()) : c);
    }
    return chars;
  }
  fail("'{}' is not iterable", v.type_name());
}

int64_t py_len(const Value& v) {
  if (v.is_undefined()) return 0;
  if (v.is_string()) return static_cast<int64_t>(code_point_count(v.as_string()));
  if (v.is_list()) return static_cast<int64_t>(v.as_list().items.size());
  if (v.is_dict()) return static_cast<int64_t>(v.as_dict().items.size());
  fail("object of type '{}' has no len()", v.type_name());
}

}  // namespace lumen::chat
