#include "chat/runtime.h"

#include <time.h>

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

namespace {
int64_t now_ns(clockid_t clock) {
  timespec t{};
  clock_gettime(clock, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}
}  // namespace

int64_t Runtime::coarse_now() { return now_ns(CLOCK_MONOTONIC_COARSE); }
int64_t Runtime::thread_cpu_now() { return now_ns(CLOCK_THREAD_CPUTIME_ID); }

void Runtime::check_cpu_time() {
  const int64_t limit = std::chrono::nanoseconds(limits_.max_time).count();
  const int64_t used = thread_cpu_now() - cpu_start_;
  if (used >= limit) fail_limit("the template ran too long (time limit)");
  // The thread was not running all the time (a loaded machine): look again once the rest of the
  // CPU time could have been spent.
  deadline_ = coarse_now() + (limit - used);
}

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
