// jinja2's built-in filters that chat templates use, with jinja2's argument names and defaults,
// and Hugging Face's tojson. Filters that jinja2 makes lazy (map, select, ...) return lists:
// templates only ever join, count or iterate them.
#include <algorithm>
#include <charconv>
#include <cmath>

#include "chat/builtins.h"
#include "chat/py_string.h"
#include "chat/taint.h"
#include "chat/value_json.h"
#include "util/error.h"

namespace lumen::chat {

namespace {

// `attribute` may be dotted ("function.name"); numeric parts index lists, as jinja2 does.
Value attribute_path(const Value& v, const std::string& path) {
  Value cur = v;
  size_t start = 0;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t idx = 0;
    auto res = std::from_chars(part.data(), part.data() + part.size(), idx);
    bool numeric = !part.empty() && res.ec == std::errc() && res.ptr == part.data() + part.size();
    cur = numeric ? get_item(cur, Value(idx)) : get_item(cur, Value(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

std::string str_arg(const Value* v, std::string dflt) { return v ? to_str(*v) : std::move(dflt); }

bool bool_arg(const Value* v, bool dflt) { return v ? truthy(*v) : dflt; }

Value do_tojson(const Value& v, const CallArgs& a) {
  a.expect_at_most("tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = bool_arg(a.get(0, "ensure_ascii"), false);
  if (const Value* indent = a.get(1, "indent"); indent && !indent->is_none()) {
    if (indent->is_string()) {
      o.indent = indent->as_string();
    } else if (indent->is_int()) {
      o.indent = std::string(static_cast<size_t>(std::clamp<int64_t>(indent->as_int(), 0, 64)), ' ');
    } else {
      fail("tojson indent must be an integer or a string");
    }
  }
  if (const Value* sep = a.get(2, "separators"); sep && !sep->is_none()) {
    if (!sep->is_list() || sep->as_list().items.size() != 2 || !sep->as_list().items[0].is_string() ||
        !sep->as_list().items[1].is_string()) {
      fail("tojson separators must be a pair of strings");
    }
    o.separators = std::make_pair(sep->as_list().items[0].as_string(), sep->as_list().items[1].as_string());
  }
  o.sort_keys = bool_arg(a.get(3, "sort_keys"), false);
  return Value(dump_json(v, o));
}

Value do_join(const Value& v, const CallArgs& a) {
  a.expect_at_most("join", 2, {"d", "attribute"});
  std::string sep = str_arg(a.get(0, "d"), "");
  const Value* attr = a.get(1, "attribute");
  std::string out;
  bool first = true;
  for (const auto& item : iterate(v)) {
    if (!first) out += sep;
    first = false;
    out += to_str(attr && !attr->is_none() ? attribute_path(item, to_str(*attr)) : item);
    check_built_size(out.size());
  }
  return Value(std::move(out));
}

Value do_default(const Value& v, const CallArgs& a) {
  a.expect_at_most("default", 2, {"default_value", "boolean"});
  const Value* dflt = a.get(0, "default_value");
  bool boolean = bool_arg(a.get(1, "boolean"), false);
  if (v.is_undefined() || (boolean && !truthy(v))) return dflt ? *dflt : Value(std::string());
  return v;
}

// select / reject / selectattr / rejectattr share one shape: pick items by a test.
Value do_select(Runtime& rt, const Value& v, const CallArgs& a, bool by_attr, bool keep_if) {
  size_t first_test_arg = by_attr ? 1 : 0;
  std::string attr;
  if (by_attr) {
    if (a.positional.empty()) fail("selectattr/rejectattr need an attribute name");
    attr = to_str(a.positional[0]);
  }
  std::optional<std::string> test;
  CallArgs test_args;
  if (a.positional.size() > first_test_arg) {
    test = to_str(a.positional[first_test_arg]);
    test_args.positional.assign(a.positional.begin() + static_cast<ptrdiff_t>(first_test_arg) + 1,
                                a.positional.end());
    test_args.keyword = a.keyword;
  }
  std::vector<Value> out;
  if (!truthy(v)) return Value::list({});  // jinja2 skips falsy input (none, "") silently
  for (const auto& item : iterate(v)) {
    rt.step();
    Value subject = by_attr ? attribute_path(item, attr) : item;
    bool ok = test ? apply_test(rt, *test, subject, test_args) : truthy(subject);
    if (ok == keep_if) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value do_map(Runtime& rt, const Value& v, const CallArgs& a) {
  std::vector<Value> out;
  if (!truthy(v)) return Value::list({});  // as jinja2: falsy input maps to nothing
  const Value* attr = nullptr;
  for (const auto& [k, x] : a.keyword) if (k == "attribute") attr = &x;
  if (attr) {
    const Value* dflt = nullptr;
    for (const auto& [k, x] : a.keyword) if (k == "default") dflt = &x;
    for (const auto& item : iterate(v)) {
      Value got = attribute_path(item, to_str(*attr));
      out.push_back(got.is_undefined() && dflt ? *dflt : got);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) fail("map() needs a filter name or attribute=");
  std::string filter = to_str(a.positional[0]);
  CallArgs rest;
  rest.positional.assign(a.positional.begin() + 1, a.positional.end());
  rest.keyword = a.keyword;
  for (const auto& item : iterate(v)) {
    rt.step();
    out.push_back(apply_filter(rt, filter, item, rest));
  }
  return Value::list(std::move(out));
}

Value do_int(const Value& v, const CallArgs& a) {
  Value dflt = a.get(0, "default") ? *a.get(0, "default") : Value(int64_t{0});
  if (v.is_int()) return v;
  if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
  if (v.is_float()) {
    double d = v.as_float();
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return dflt;
    return Value(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    int64_t i = 0;
    const char* b = s.data() + (s.size() > 0 && s[0] == '+' ? 1 : 0);
    auto res = std::from_chars(b, s.data() + s.size(), i);
    if (res.ec == std::errc() && res.ptr == s.data() + s.size()) return Value(i);
    double d = 0;
    auto rd = std::from_chars(b, s.data() + s.size(), d);
    if (rd.ec == std::errc() && rd.ptr == s.data() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) {
      return Value(static_cast<int64_t>(d));
    }
  }
  return dflt;
}

Value do_float(const Value& v, const CallArgs& a) {
  Value dflt = a.get(0, "default") ? *a.get(0, "default") : Value(0.0);
  if (v.is_number()) return Value(v.as_number());
  if (v.is_string()) {
    std::string s = py_strip(v.as_string(), std::nullopt, true, true);
    double d = 0;
    const char* b = s.data() + (s.size() > 0 && s[0] == '+' ? 1 : 0);
    auto res = std::from_chars(b, s.data() + s.size(), d);
    if (res.ec == std::errc() && res.ptr == s.data() + s.size()) return Value(d);
  }
  return dflt;
}

Value do_sort(const Value& v, const CallArgs& a, bool unique_only) {
  bool reverse = !unique_only && bool_arg(a.get(0, "reverse"), false);
  bool case_sensitive = bool_arg(a.get(unique_only ? 0 : 1, "case_sensitive"), false);
  const Value* attr = a.get(unique_only ? 1 : 2, "attribute");
  auto key = [&](const Value& item) {
    Value k = attr && !attr->is_none() ? attribute_path(item, to_str(*attr)) : item;
    if (!case_sensitive && k.is_string()) return Value(ascii_lower(k.as_string()));
    return k;
  };
  std::vector<Value> items = iterate(v);
  if (unique_only) {
    std::vector<Value> out, seen;
    for (const auto& item : items) {
      Value k = key(item);
      bool dup = std::any_of(seen.begin(), seen.end(), [&](const Value& s) { return equals(s, k); });
      if (!dup) {
        seen.push_back(k);
        out.push_back(item);
      }
    }
    return Value::list(std::move(out));
  }
  std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
    return reverse ? compare(key(y), key(x)) < 0 : compare(key(x), key(y)) < 0;
  });
  return Value::list(std::move(items));
}

Value do_indent(const Value& v, const CallArgs& a) {
  a.expect_at_most("indent", 3, {"width", "first", "blank"});
  const Value* width = a.get(0, "width");
  std::string pad = !width ? std::string(4, ' ')
                    : width->is_string() ? width->as_string()
                                         : std::string(static_cast<size_t>(std::clamp<int64_t>(
                                                           width->is_int() ? width->as_int() : 4, 0, 256)),
                                                       ' ');
  bool first = bool_arg(a.get(1, "first"), false), blank = bool_arg(a.get(2, "blank"), false);
  // jinja2's indent splits the text with a newline appended, so a trailing break yields an
  // empty last line.
  std::vector<std::string> lines = py_splitlines(to_str(v) + "\n");
  std::string out = lines.empty() ? std::string() : lines[0];
  for (size_t i = 1; i < lines.size(); ++i) {
    out += "\n";
    if (blank || !lines[i].empty()) out += pad;
    out += lines[i];
    check_built_size(out.size());
  }
  return Value(first ? pad + out : out);
}

Value first_or_last(const Value& v, bool last) {
  std::vector<Value> items = iterate(v);
  if (items.empty()) return Value::undefined(last ? "No last item, sequence was empty." : "No first item, sequence was empty.");
  return last ? items.back() : items.front();
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

namespace {
Value filter_value(Runtime& rt, std::string_view name, const Value& v, const CallArgs& a);
}  // namespace

Value apply_filter(Runtime& rt, std::string_view name, const Value& v, const CallArgs& a) {
  rt.step();
  Value result = filter_value(rt, name, v, a);
  if (result.is_string()) rt.check_size(result.as_string().size());
  // Filters do not follow bytes: a string made from client text is client text.
  if (!may_carry_text(result)) return result;
  return taint_result(std::move(result), has_client_text(v, a));
}

namespace {
Value filter_value(Runtime& rt, std::string_view name, const Value& v, const CallArgs& a) {
  if (name == "trim") {
    const Value* chars = a.get(0, "chars");
    std::optional<std::string> set;
    if (chars && !chars->is_none()) set = to_str(*chars);
    return Value(py_strip(to_str(v), set, true, true));
  }
  if (name == "length" || name == "count") return Value(py_len(v));
  if (name == "tojson") return do_tojson(v, a);
  if (name == "items") {
    if (v.is_undefined()) return Value::list({});
    if (!v.is_dict()) fail("Can only get item pairs from a mapping.");
    std::vector<Value> out;
    for (const auto& [k, x] : v.as_dict().items) {
      out.push_back(Value::list({v.as_dict().client_keys ? Value::client_text(k) : Value(k), x}, true));
    }
    return Value::list(std::move(out));
  }
  if (name == "join") return do_join(v, a);
  if (name == "upper") return Value(ascii_upper(to_str(v)));
  if (name == "lower") return Value(ascii_lower(to_str(v)));
  if (name == "capitalize") return Value(py_capitalize(to_str(v)));
  if (name == "title") return Value(py_title(to_str(v)));
  if (name == "default" || name == "d") return do_default(v, a);
  if (name == "first") return first_or_last(v, false);
  if (name == "last") return first_or_last(v, true);
  if (name == "list") return Value::list(iterate(v));
  if (name == "map") return do_map(rt, v, a);
  if (name == "select") return do_select(rt, v, a, false, true);
  if (name == "reject") return do_select(rt, v, a, false, false);
  if (name == "selectattr") return do_select(rt, v, a, true, true);
  if (name == "rejectattr") return do_select(rt, v, a, true, false);
  if (name == "string") return Value(to_str(v));
  if (name == "int") return do_int(v, a);
  if (name == "float") return do_float(v, a);
  if (name == "abs") {
    if (v.is_int()) {
      if (v.as_int() == INT64_MIN) fail("integer overflow");
      return Value(v.as_int() < 0 ? -v.as_int() : v.as_int());
    }
    if (v.is_bool()) return Value(static_cast<int64_t>(v.as_bool()));
    if (v.is_float()) return Value(std::fabs(v.as_float()));
    fail("bad operand type for abs(): '{}'", v.type_name());
  }
  if (name == "replace") {
    a.expect_at_most("replace", 3, {"old", "new", "count"});
    const Value* from = a.get(0, "old");
    const Value* to = a.get(1, "new");
    if (!from || !to) fail("replace filter needs old and new strings");
    const Value* count = a.get(2, "count");
    std::string out = py_replace(to_str(v), to_str(*from), to_str(*to),
                                 count && count->is_int() ? count->as_int() : -1);
    rt.check_size(out.size());
    return Value(std::move(out));
  }
  if (name == "reverse") {
    std::vector<Value> items = iterate(v);
    std::reverse(items.begin(), items.end());
    if (!v.is_string()) return Value::list(std::move(items));
    std::string out;
    for (const auto& c : items) out += c.as_string();
    return Value(std::move(out));
  }
  if (name == "sort") return do_sort(v, a, false);
  if (name == "unique") return do_sort(v, a, true);
  if (name == "min" || name == "max") {
    Value sorted = do_sort(v, CallArgs{{}, a.keyword}, false);
    const auto& items = sorted.as_list().items;
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    return name == "min" ? items.front() : items.back();
  }
  if (name == "sum") {
    const Value* attr = a.get(1, "attribute");
    Value total = a.get(2, "start") ? *a.get(2, "start") : Value(int64_t{0});
    for (const auto& item : iterate(v)) {
      Value x = attr && !attr->is_none() ? attribute_path(item, to_str(*attr)) : item;
      if (!x.is_number() || !total.is_number()) fail("unsupported operand type(s) for +");
      if (total.is_float() || x.is_float()) total = Value(total.as_number() + x.as_number());
      else total = Value(static_cast<int64_t>(total.as_number()) + static_cast<int64_t>(x.as_number()));
    }
    return total;
  }
  if (name == "indent") return do_indent(v, a);
  if (name == "safe") return v;
  if (name == "escape" || name == "e") return Value(html_escape(to_str(v)));
  if (name == "attr") {
    const Value* attr = a.get(0, "name");
    if (!attr) fail("attr filter needs a name");
    return get_attribute(v, to_str(*attr));
  }
  if (name == "dictsort") {
    if (!v.is_dict()) fail("dictsort needs a mapping");
    bool case_sensitive = bool_arg(a.get(0, "case_sensitive"), false);
    bool by_value = a.get(1, "by") && to_str(*a.get(1, "by")) == "value";
    bool reverse = bool_arg(a.get(2, "reverse"), false);
    std::vector<Value> pairs;
    for (const auto& [k, x] : v.as_dict().items) {
      pairs.push_back(Value::list({v.as_dict().client_keys ? Value::client_text(k) : Value(k), x}, true));
    }
    std::stable_sort(pairs.begin(), pairs.end(), [&](const Value& p, const Value& q) {
      Value x = p.as_list().items[by_value ? 1 : 0], y = q.as_list().items[by_value ? 1 : 0];
      if (!case_sensitive && x.is_string() && y.is_string()) {
        x = Value(ascii_lower(x.as_string()));
        y = Value(ascii_lower(y.as_string()));
      }
      return reverse ? compare(y, x) < 0 : compare(x, y) < 0;
    });
    return Value::list(std::move(pairs));
  }
  fail("no filter named '{}'", name);
}
}  // namespace

}  // namespace lumen::chat
