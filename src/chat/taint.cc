#include "chat/taint.h"

namespace lumen::chat {

void taint_append(Taint& dst, const Taint& src, size_t offset) {
  for (const auto& [b, e] : src) {
    if (b == e) continue;
    if (!dst.empty() && dst.back().second == b + offset) dst.back().second = e + offset;
    else dst.emplace_back(b + offset, e + offset);
  }
}

bool has_client_text(const Value& v) {
  if (v.is_string()) return !v.taint().empty();
  if (v.is_list()) {
    for (const auto& item : v.as_list().items) if (has_client_text(item)) return true;
    return false;
  }
  if (v.is_dict() || v.is_namespace()) {
    const DictData& d = v.is_dict() ? v.as_dict() : v.as_namespace().attrs;
    if (d.client_keys) return true;
    for (const auto& [k, x] : d.items) if (has_client_text(x)) return true;
  }
  return false;
}

bool has_client_text(const Value& subject, const CallArgs& args) {
  if (has_client_text(subject)) return true;
  for (const auto& v : args.positional) if (has_client_text(v)) return true;
  for (const auto& [k, v] : args.keyword) if (has_client_text(v)) return true;
  return false;
}

void append_printed(TaintedText& out, const Value& v) {
  if (v.is_string()) {
    out.append(v.as_string(), v.taint());
    return;
  }
  std::string printed = to_str(v);
  Taint t;
  if (!printed.empty() && has_client_text(v)) t.emplace_back(0, printed.size());
  out.append(printed, t);
}

namespace {
Value whole(const Value& s) {
  const Taint& t = s.taint();
  if (s.as_string().empty() || (t.size() == 1 && t[0].first == 0 && t[0].second == s.as_string().size())) return s;
  return Value::client_text(s.as_string());
}
}  // namespace

bool may_carry_text(const Value& result) {
  if (result.is_string()) return true;
  if (!result.is_list()) return false;
  for (const auto& item : result.as_list().items) if (item.is_string()) return true;
  return false;
}

Value taint_result(Value result, bool inputs_tainted) {
  if (!inputs_tainted) return result;
  if (result.is_string()) return whole(result);
  if (result.is_list()) {
    const auto& l = result.as_list();
    bool any = false;
    for (const auto& item : l.items) any = any || item.is_string();
    if (!any) return result;
    std::vector<Value> items;
    items.reserve(l.items.size());
    for (const auto& item : l.items) items.push_back(item.is_string() ? whole(item) : item);
    return Value::list(std::move(items), l.tuple);
  }
  return result;
}

}  // namespace lumen::chat
