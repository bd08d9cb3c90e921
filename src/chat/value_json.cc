#include "chat/value_json.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

#include "chat/py_string.h"
#include "util/error.h"

namespace lumen::chat {

namespace {
// Printing, comparing and dumping values recurse; inputs nested deeper than any real
// conversation are refused up front so those stay within the stack.
constexpr int kMaxJsonDepth = 256;

Value from_json_at(const nlohmann::ordered_json& json, int depth, bool client);
}  // namespace

Value from_json(const nlohmann::ordered_json& json, bool client) { return from_json_at(json, 0, client); }

namespace {
Value from_json_at(const nlohmann::ordered_json& json, int depth, bool client) {
  using nlohmann::ordered_json;
  if (depth > kMaxJsonDepth) fail("template input is nested more than {} levels deep", kMaxJsonDepth);
  switch (json.type()) {
    case ordered_json::value_t::null: return Value(None{});
    case ordered_json::value_t::boolean: return Value(json.get<bool>());
    case ordered_json::value_t::number_integer: return Value(json.get<int64_t>());
    case ordered_json::value_t::number_unsigned: {
      auto u = json.get<uint64_t>();
      if (u > static_cast<uint64_t>(INT64_MAX)) fail("integer {} is too large for a template", u);
      return Value(static_cast<int64_t>(u));
    }
    case ordered_json::value_t::number_float: return Value(json.get<double>());
    case ordered_json::value_t::string: {
      // nlohmann's parser rejects invalid UTF-8, but a caller may build JSON by hand.
      const auto& s = json.get_ref<const std::string&>();
      if (!utf8_valid(s)) fail("template input string is not valid UTF-8");
      return client ? Value::client_text(s) : Value(s);
    }
    case ordered_json::value_t::array: {
      std::vector<Value> items;
      items.reserve(json.size());
      for (const auto& item : json) items.push_back(from_json_at(item, depth + 1, client));
      return Value::list(std::move(items));
    }
    case ordered_json::value_t::object: {
      std::vector<std::pair<std::string, Value>> items;
      items.reserve(json.size());
      for (const auto& [k, v] : json.items()) items.emplace_back(k, from_json_at(v, depth + 1, client));
      return Value::dict(std::move(items), client);
    }
    default: fail("unsupported JSON value in template input");
  }
}
}  // namespace

namespace {

void dump_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  size_t pos = 0;
  while (pos < s.size()) {
    size_t start = pos;
    char32_t cp = utf8_next(s, pos);
    switch (cp) {
      case '"': out += "\\\""; continue;
      case '\\': out += "\\\\"; continue;
      case '\n': out += "\\n"; continue;
      case '\r': out += "\\r"; continue;
      case '\t': out += "\\t"; continue;
      case '\b': out += "\\b"; continue;
      case '\f': out += "\\f"; continue;
      default: break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7f)) {
      if (cp >= 0x10000) {  // UTF-16 surrogate pair, as Python writes it
        char32_t v = cp - 0x10000;
        out += fmt::format("\\u{:04x}\\u{:04x}", static_cast<unsigned>(0xd800 + (v >> 10)),
                           static_cast<unsigned>(0xdc00 + (v & 0x3ff)));
      } else {
        out += fmt::format("\\u{:04x}", static_cast<unsigned>(cp));
      }
    } else {
      out.append(s.substr(start, pos - start));
    }
  }
  out += '"';
}

class JsonWriter {
 public:
  explicit JsonWriter(const JsonDumpOptions& o) : o_(o) {
    if (o_.separators) {
      item_sep_ = o_.separators->first;
      key_sep_ = o_.separators->second;
    } else {
      item_sep_ = o_.indent ? "," : ", ";
      key_sep_ = ": ";
    }
  }

  void write(const Value& v, size_t depth) {
    // Nesting is bounded by the input's own nesting (values cannot be cyclic: containers are
    // immutable), and nlohmann's parser limits that; namespaces cannot be dumped at all.
    if (v.is_none()) out_ += "null";
    else if (v.is_bool()) out_ += v.as_bool() ? "true" : "false";
    else if (v.is_int()) out_ += std::to_string(v.as_int());
    else if (v.is_float()) write_float(v.as_float());
    else if (v.is_string()) dump_string(out_, v.as_string(), o_.ensure_ascii);
    else if (v.is_list()) write_list(v.as_list(), depth);
    else if (v.is_dict()) write_dict(v.as_dict(), depth);
    else if (v.is_undefined()) fail("Object of type Undefined is not JSON serializable");
    else fail("Object of type {} is not JSON serializable", v.type_name());
  }

  std::string take() { return std::move(out_); }

 private:
  void write_float(double d) {
    if (std::isnan(d)) out_ += "NaN";
    else if (std::isinf(d)) out_ += d > 0 ? "Infinity" : "-Infinity";
    else out_ += py_float_repr(d);
  }

  void newline(size_t depth) {
    if (!o_.indent) return;
    check_built_size(out_.size() + 1 + depth * o_.indent->size());
    out_ += '\n';
    for (size_t i = 0; i < depth; ++i) out_ += *o_.indent;
  }

  void write_list(const ListData& l, size_t depth) {
    if (l.items.empty()) {
      out_ += "[]";
      return;
    }
    out_ += '[';
    for (size_t i = 0; i < l.items.size(); ++i) {
      if (i) out_ += item_sep_;
      newline(depth + 1);
      write(l.items[i], depth + 1);
      check_built_size(out_.size());
    }
    newline(depth);
    out_ += ']';
  }

  void write_dict(const DictData& d, size_t depth) {
    if (d.items.empty()) {
      out_ += "{}";
      return;
    }
    std::vector<const std::pair<std::string, Value>*> order;
    for (const auto& item : d.items) order.push_back(&item);
    if (o_.sort_keys) {
      std::stable_sort(order.begin(), order.end(),
                       [](auto* a, auto* b) { return a->first < b->first; });
    }
    out_ += '{';
    for (size_t i = 0; i < order.size(); ++i) {
      if (i) out_ += item_sep_;
      newline(depth + 1);
      dump_string(out_, order[i]->first, o_.ensure_ascii);
      out_ += key_sep_;
      write(order[i]->second, depth + 1);
      check_built_size(out_.size());
    }
    newline(depth);
    out_ += '}';
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, key_sep_, out_;
};

}  // namespace

std::string dump_json(const Value& value, const JsonDumpOptions& options) {
  JsonWriter writer(options);
  writer.write(value, 0);
  return writer.take();
}

}  // namespace lumen::chat
