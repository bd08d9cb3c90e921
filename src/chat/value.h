#pragma once
// The data model templates compute with: Python's values as Jinja sees them. Lists, dicts and
// strings are immutable once built (HF renders in an ImmutableSandboxedEnvironment, where
// list.append and friends are refused), so containers are shared, not copied. The namespace()
// object is the one mutable value: `{% set ns.x = ... %}` writes through every copy of it.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "chat/memory_budget.h"

namespace lumen::chat {

class Value;
class Runtime;
struct CallArgs;

// Byte ranges [begin, end) of a string that came from the client (message text, tool schemas,
// kwargs values), sorted and disjoint. The prompt builder tokenizes them as plain text, so only
// the template's own text can produce control tokens. Operations that cannot follow the bytes
// mark their whole result as client text when any input had some (see taint.h).
using Taint = std::vector<std::pair<size_t, size_t>>;

// A string's heap bytes are charged to the render's memory budget (memory_budget.h) while it
// lives; a copy charges its own.
struct StrData {
  std::string text;
  Taint taint;
  HeldBytes held;

  StrData(std::string t, Taint tt) : text(std::move(t)), taint(std::move(tt)), held(heap_bytes()) {}
  StrData(const StrData& o) : text(o.text), taint(o.taint), held(heap_bytes()) {}
  StrData(StrData&&) noexcept = default;
  StrData& operator=(const StrData& o) {
    StrData copy(o);
    return *this = std::move(copy);
  }
  StrData& operator=(StrData&&) noexcept = default;
  ~StrData() = default;

 private:
  size_t heap_bytes() const;
};

struct Undefined {
  std::string hint;  // jinja2's message for a use that must fail, e.g. "'x' is undefined"
};
struct None {};
struct ListData {
  std::vector<Value> items;
  bool tuple = false;  // only changes how it prints: (a, b) rather than [a, b]
  int depth = 1;       // nesting levels, bounded (kMaxValueDepth) so recursion stays in the stack
  HeldBytes held;      // the item array, charged once however many values share the list
};
struct DictData {
  std::vector<std::pair<std::string, Value>> items;  // insertion order, like a Python dict
  const Value* find(std::string_view key) const;
  bool client_keys = false;  // the keys came from the client (JSON input): they are client text
  int depth = 1;
  HeldBytes held;  // the item array and the keys (a namespace's attributes, named by the template, are not charged)
};

// Containers nest at most this deep. Printing, comparing and dumping recurse, so deeper values
// (a template wrapping a list in a list in a loop) are refused when built. Namespaces (the one
// mutable value) cannot be put inside any value, so no value can contain itself.
constexpr int kMaxValueDepth = 300;
// The depth a value adds to a container holding it; fails for a namespace.
int nested_depth(const Value& v);
struct NamespaceData {
  DictData attrs;
};
struct CallableData {
  std::string name;
  std::function<Value(Runtime&, const CallArgs&)> fn;
  bool tracks_client_text = false;
  std::shared_ptr<const Value> self;  // a bound method's object; null for a plain function  // a macro: its output carries exact client ranges
};

class Value {
 public:
  using ListPtr = std::shared_ptr<const ListData>;
  using DictPtr = std::shared_ptr<const DictData>;
  using NamespacePtr = std::shared_ptr<NamespaceData>;
  using CallablePtr = std::shared_ptr<const CallableData>;
  using Storage = std::variant<Undefined, None, bool, int64_t, double, StrData, ListPtr,
                               DictPtr, NamespacePtr, CallablePtr>;

  Value() : v_(Undefined{}) {}
  Value(None) : v_(None{}) {}
  Value(bool b) : v_(b) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::string s) : v_(StrData{std::move(s), {}}) {}
  Value(const char* s) : v_(StrData{std::string(s), {}}) {}
  // A string with the given client ranges.
  static Value text(std::string s, Taint taint) { Value v; v.v_ = StrData{std::move(s), std::move(taint)}; return v; }
  // A string that is client text from end to end.
  static Value client_text(std::string s);
  Value(Undefined u) : v_(std::move(u)) {}
  Value(NamespacePtr ns) : v_(std::move(ns)) {}
  Value(CallablePtr fn) : v_(std::move(fn)) {}

  static Value undefined(std::string hint) { return Value(Undefined{std::move(hint)}); }
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(std::vector<std::pair<std::string, Value>> items, bool client_keys = false);
  static Value callable(std::string name, std::function<Value(Runtime&, const CallArgs&)> fn);

  bool is_undefined() const { return std::holds_alternative<Undefined>(v_); }
  bool is_none() const { return std::holds_alternative<None>(v_); }
  bool is_bool() const { return std::holds_alternative<bool>(v_); }
  bool is_int() const { return std::holds_alternative<int64_t>(v_); }
  bool is_float() const { return std::holds_alternative<double>(v_); }
  bool is_number() const { return is_int() || is_float() || is_bool(); }
  bool is_string() const { return std::holds_alternative<StrData>(v_); }
  bool is_list() const { return std::holds_alternative<ListPtr>(v_); }
  bool is_dict() const { return std::holds_alternative<DictPtr>(v_); }
  bool is_namespace() const { return std::holds_alternative<NamespacePtr>(v_); }
  bool is_callable() const { return std::holds_alternative<CallablePtr>(v_); }

  bool as_bool() const { return std::get<bool>(v_); }
  int64_t as_int() const { return std::get<int64_t>(v_); }
  double as_float() const { return std::get<double>(v_); }
  const std::string& as_string() const { return std::get<StrData>(v_).text; }
  const Taint& taint() const { return std::get<StrData>(v_).taint; }
  const ListData& as_list() const { return *std::get<ListPtr>(v_); }
  const DictData& as_dict() const { return *std::get<DictPtr>(v_); }
  NamespaceData& as_namespace() const { return *std::get<NamespacePtr>(v_); }
  const CallableData& as_callable() const { return *std::get<CallablePtr>(v_); }
  const Undefined& as_undefined() const { return std::get<Undefined>(v_); }
  // Numeric value of an int, float or bool (Python's bool is an int).
  double as_number() const;

  // The Python type name jinja2 uses in messages: "dict object", "str object", ...
  std::string type_name() const;

 private:
  Storage v_;
};

// Python semantics.
bool truthy(const Value& v);
bool equals(const Value& a, const Value& b);
// -1, 0, 1 for values Python can order (numbers, strings, lists); lumen::Error otherwise.
int compare(const Value& a, const Value& b);
std::string to_str(const Value& v);   // str(v), what {{ v }} prints
std::string to_repr(const Value& v);  // repr(v), used inside container printing
std::string py_float_repr(double d);

// Throws the undefined error jinja2 raises when an undefined value is used where it must not be.
[[noreturn]] void fail_undefined(const Value& v);

}  // namespace lumen::chat
