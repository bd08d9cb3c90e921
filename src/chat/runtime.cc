#include "chat/runtime.h"

#include "chat/taint.h"
#include "util/error.h"

namespace lumen::chat {

const Value* CallArgs::get(size_t index, std::string_view name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keyword) {
    if (k == name) return &v;
  }
  return nullptr;
}

void CallArgs::expect_at_most(std::string_view function, size_t max_positional,
                              std::initializer_list<std::string_view> keywords) const {
  if (positional.size() > max_positional) {
    fail("{}() takes at most {} positional arguments ({} given)", function, max_positional,
         positional.size());
  }
  for (const auto& [k, v] : keyword) {
    bool known = false;
    for (auto name : keywords) known = known || name == k;
    if (!known) fail("{}() got an unexpected keyword argument '{}'", function, k);
  }
}

void Runtime::fail_limit(const char* what) { throw RenderRefused(what); }

Value Runtime::call(const Value& callee, const CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (!callee.is_callable()) fail("'{}' is not callable", callee.type_name());
  const CallableData& fn = callee.as_callable();
  if (fn.tracks_client_text) return fn.fn(*this, args);
  // Bound methods carry their object: a str method on client text gives client text.
  Value result = fn.fn(*this, args);
  if (result.is_string()) check_size(result.as_string().size());
  if (!may_carry_text(result)) return result;
  bool tainted = (fn.self && has_client_text(*fn.self)) || has_client_text(Value(), args);
  return taint_result(std::move(result), tainted);

}

}  // namespace lumen::chat
