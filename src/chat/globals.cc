// The functions a template can call by name: jinja2's namespace / range / dict, and the two
// helpers transformers adds, raise_exception (the template refuses a conversation) and
// strftime_now (today's date for Llama 3.x system prompts; here from the render's fixed clock).
#include <ctime>

#include "chat/builtins.h"
#include "util/error.h"

namespace lumen::chat {

namespace {

// jinja2's sandbox refuses ranges longer than this (MAX_RANGE).
constexpr int64_t kMaxRange = 100000;

Value make_namespace(Runtime&, const CallArgs& a) {
  auto ns = std::make_shared<NamespaceData>();
  auto put = [&](const std::string& k, const Value& v) {
    (void)nested_depth(v);  // refuses a namespace inside a namespace (a cycle could follow)
    for (auto& [key, val] : ns->attrs.items) {
      if (key == k) {
        val = v;
        return;
      }
    }
    ns->attrs.items.emplace_back(k, v);
  };
  if (a.positional.size() > 1) fail("namespace() takes at most one positional argument");
  if (!a.positional.empty()) {
    if (!a.positional[0].is_dict()) fail("namespace() positional argument must be a mapping");
    for (const auto& [k, v] : a.positional[0].as_dict().items) put(k, v);
  }
  for (const auto& [k, v] : a.keyword) put(k, v);
  return Value(std::move(ns));
}

Value make_range(Runtime&, const CallArgs& a) {
  if (!a.keyword.empty() || a.positional.empty() || a.positional.size() > 3) {
    fail("range() takes 1 to 3 positional arguments");
  }
  int64_t args[3] = {0, 0, 1};
  for (size_t i = 0; i < a.positional.size(); ++i) {
    const Value& v = a.positional[i];
    if (!v.is_int() && !v.is_bool()) fail("range() arguments must be integers, not {}", v.type_name());
    args[i] = v.is_int() ? v.as_int() : v.as_bool();
  }
  int64_t start = a.positional.size() == 1 ? 0 : args[0];
  int64_t stop = a.positional.size() == 1 ? args[0] : args[1];
  int64_t step = a.positional.size() == 3 ? args[2] : 1;
  if (step == 0) fail("range() arg 3 must not be zero");
  std::vector<Value> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) >= kMaxRange) fail("range too big, maximum size is {}", kMaxRange);
    out.emplace_back(i);
    if ((step > 0 && i > INT64_MAX - step) || (step < 0 && i < INT64_MIN - step)) break;
  }
  return Value::list(std::move(out));
}

Value make_dict(Runtime&, const CallArgs& a) {
  if (!a.positional.empty()) fail("dict() with positional arguments is not supported");
  return Value::dict(a.keyword);
}

Value raise_exception(Runtime&, const CallArgs& a) {
  const Value* msg = a.get(0, "message");
  throw RenderRefused(fmt::format("the template raised an error: {}", msg ? to_str(*msg) : std::string()));
}

Value strftime_now(Runtime& rt, const CallArgs& a) {
  const Value* fmt_arg = a.get(0, "format");
  if (!fmt_arg || !fmt_arg->is_string()) fail("strftime_now() needs a format string");
  const std::string& f = fmt_arg->as_string();
  if (f.size() > 256) fail("strftime_now() format is too long");
  std::time_t now = rt.now();
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[1024];
  size_t n = std::strftime(buf, sizeof buf, f.c_str(), &tm);
  if (n == 0 && !f.empty()) fail("strftime_now() result is too long or empty");
  return Value(std::string(buf, n));
}

}  // namespace

std::optional<Value> global_function(std::string_view name) {
  if (name == "namespace") return Value::callable("namespace", make_namespace);
  if (name == "range") return Value::callable("range", make_range);
  if (name == "dict") return Value::callable("dict", make_dict);
  if (name == "raise_exception") return Value::callable("raise_exception", raise_exception);
  if (name == "strftime_now") return Value::callable("strftime_now", strftime_now);
  return std::nullopt;
}

}  // namespace lumen::chat
