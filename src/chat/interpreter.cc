#include "chat/interpreter.h"

#include <cmath>

#include "chat/builtins.h"
#include "util/error.h"

namespace lumen::chat {

TaintedText Interpreter::render(const Body& body) {
  TaintedText out;
  exec_body(body, out);
  return out;
}

void Interpreter::append(TaintedText& out, const Value& v) const {
  if (v.is_string()) rt_.check_size(out.text.size() + v.as_string().size());
  append_printed(out, v);
  rt_.check_size(out.text.size());
}

Interpreter::Flow Interpreter::exec_body(const Body& body, TaintedText& out) {
  for (const auto& s : body) {
    Flow f = exec(*s, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

Interpreter::Flow Interpreter::exec(const Stmt& s, TaintedText& out) {
  rt_.step();
  rt_.line = s.line;
  switch (s.kind) {
    case StmtKind::Text:
      rt_.check_size(out.text.size() + s.text.size());
      out.text += s.text;
      break;
    case StmtKind::Print: append(out, eval(*s.expr)); break;
    case StmtKind::If:
      for (const auto& [cond, body] : s.branches) {
        if (!cond || truthy(eval(*cond))) return exec_body(body, out);
      }
      break;
    case StmtKind::For: exec_for(s, out); break;
    case StmtKind::Set: case StmtKind::SetBlock: exec_set(s, out); break;
    case StmtKind::Macro: define_macro(s); break;
    case StmtKind::FilterBlock: {
      TaintedText inner;
      Flow f = exec_body(s.body, inner);
      Value v = std::move(inner).value();
      for (const auto& filter : s.filters) {
        rt_.line = filter->line;
        v = apply_filter(rt_, filter->name, v, eval_args(*filter, 1));
      }
      append(out, v);
      return f;
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
    case StmtKind::Scope: return exec_body(s.body, out);
  }
  return Flow::Normal;
}

void Interpreter::bind_targets(const std::vector<std::string>& names, const Value& v) {
  if (names.size() == 1) {
    assign(names[0], v);
    return;
  }
  std::vector<Value> parts = iterate(v);
  if (parts.size() != names.size()) {
    fail("cannot unpack {} values into {} names", parts.size(), names.size());
  }
  for (size_t i = 0; i < names.size(); ++i) assign(names[i], parts[i]);
}

void Interpreter::exec_for(const Stmt& s, TaintedText& out) {
  Value iterable = eval(*s.expr);
  if (iterable.is_none() || iterable.is_number() || iterable.is_callable() || iterable.is_namespace()) {
    fail("'{}' is not iterable", iterable.type_name());
  }
  std::vector<Value> items = iterate(iterable);
  // The loop holds its own copy of the items while its body runs (nested loops each one).
  HeldBytes items_held(items.capacity() * sizeof(Value));
  if (s.condition) {  // `for x in xs if cond`: filtered before the loop, so loop.* counts the kept
    std::vector<Value> kept;
    for (const auto& item : items) {
      rt_.step();
      frames_.emplace_back();
      try {
        bind_targets(s.targets, item);
        if (truthy(eval(*s.condition))) kept.push_back(item);
      } catch (...) {
        frames_.pop_back();
        throw;
      }
      frames_.pop_back();
    }
    items = std::move(kept);
  }
  if (items.empty()) {
    exec_body(s.else_body, out);
    return;
  }
  auto n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    rt_.step();  // an empty loop body must still count, or nested loops could run unbounded
    auto k = static_cast<size_t>(i);
    std::vector<std::pair<std::string, Value>> loop = {
        {"index", Value(i + 1)},       {"index0", Value(i)},
        {"revindex", Value(n - i)},    {"revindex0", Value(n - i - 1)},
        {"first", Value(i == 0)},      {"last", Value(i == n - 1)},
        {"length", Value(n)},          {"depth", Value(int64_t{1})},
        {"depth0", Value(int64_t{0})},
    };
    if (k > 0) loop.emplace_back("previtem", items[k - 1]);
    if (k + 1 < items.size()) loop.emplace_back("nextitem", items[k + 1]);
    loop.emplace_back("cycle", Value::callable("cycle", [i](Runtime&, const CallArgs& a) {
      if (a.positional.empty()) fail("no items for cycling given");
      return a.positional[static_cast<size_t>(i) % a.positional.size()];
    }));
    frames_.emplace_back();
    Flow f;
    try {
      frames_.back().emplace_back("loop", Value::dict(std::move(loop)));
      bind_targets(s.targets, items[k]);
      f = exec_body(s.body, out);
    } catch (...) {
      frames_.pop_back();
      throw;
    }
    frames_.pop_back();
    if (f == Flow::Break) break;
  }
}

void Interpreter::exec_set(const Stmt& s, TaintedText& out) {
  (void)out;
  Value v;
  if (s.kind == StmtKind::SetBlock) {
    TaintedText inner;
    exec_body(s.body, inner);
    v = std::move(inner).value();
    for (const auto& filter : s.filters) v = apply_filter(rt_, filter->name, v, eval_args(*filter, 1));
  } else {
    v = eval(*s.expr);
  }
  if (s.target_attr.empty()) {
    bind_targets(s.targets, v);
    return;
  }
  Value target = lookup(s.targets[0]);
  if (!target.is_namespace()) fail("cannot assign attribute on non-namespace object");
  (void)nested_depth(v);  // no namespace inside a namespace: `ns.self = ns` would be a cycle
  auto& attrs = target.as_namespace().attrs.items;
  for (auto& [k, x] : attrs) {
    if (k == s.target_attr) {
      x = std::move(v);
      return;
    }
  }
  attrs.emplace_back(s.target_attr, std::move(v));
}

void Interpreter::define_macro(const Stmt& s) {
  const Stmt* def = &s;
  auto data = std::make_shared<CallableData>();
  data->name = s.text;
  data->fn = [this, def](Runtime&, const CallArgs& args) { return call_macro(*def, args); };
  data->tracks_client_text = true;  // the output carries its exact client ranges
  assign(s.text, Value(Value::CallablePtr(std::move(data))));
}

Value Interpreter::call_macro(const Stmt& s, const CallArgs& args) {
  if (args.positional.size() > s.params.size()) fail("macro '{}' takes not more than {} argument(s)", s.text, s.params.size());
  if (++rt_.call_depth > rt_.limits().max_call_depth) {
    --rt_.call_depth;
    Runtime::fail_limit("macro calls nest too deeply");
  }
  // The macro runs with the template's top-level scope and its own; the caller's loop scopes
  // are set aside and put back afterwards.
  std::vector<Scope> saved(std::make_move_iterator(frames_.begin() + 1), std::make_move_iterator(frames_.end()));
  frames_.resize(1);
  frames_.emplace_back();
  int saved_line = rt_.line;
  TaintedText out;
  try {
    for (size_t i = 0; i < s.params.size(); ++i) {
      const auto& [name, dflt] = s.params[i];
      const Value* given = args.get(i, name);
      frames_.back().emplace_back(name, given ? *given : dflt ? eval(*dflt) : Value::undefined(
                                                              fmt::format("'{}' is undefined", name)));
    }
    for (const auto& [k, v] : args.keyword) {
      bool known = false;
      for (const auto& p : s.params) known = known || p.first == k;
      if (!known) fail("macro '{}' has no argument '{}'", s.text, k);
    }
    exec_body(s.body, out);
  } catch (...) {
    frames_.resize(1);
    for (auto& f : saved) frames_.push_back(std::move(f));
    --rt_.call_depth;
    throw;
  }
  frames_.resize(1);
  for (auto& f : saved) frames_.push_back(std::move(f));
  --rt_.call_depth;
  rt_.line = saved_line;
  return std::move(out).value();
}

Value Interpreter::lookup(const std::string& name) const {
  for (auto frame = frames_.rbegin(); frame != frames_.rend(); ++frame) {
    for (auto it = frame->rbegin(); it != frame->rend(); ++it) {
      if (it->first == name) return it->second;
    }
  }
  if (auto fn = global_function(name)) return *fn;
  return Value::undefined(fmt::format("'{}' is undefined", name));
}

void Interpreter::assign(const std::string& name, Value v) {
  for (auto& [k, x] : frames_.back()) {
    if (k == name) {
      x = std::move(v);
      return;
    }
  }
  frames_.back().emplace_back(name, std::move(v));
}

CallArgs Interpreter::eval_args(const Expr& e, size_t first_positional) {
  CallArgs a;
  for (size_t i = first_positional; i < e.args.size(); ++i) a.positional.push_back(eval(*e.args[i]));
  for (const auto& [k, v] : e.kwargs) a.keyword.emplace_back(k, eval(*v));
  return a;
}

Value Interpreter::eval(const Expr& e) {
  rt_.step();
  rt_.line = e.line;
  switch (e.kind) {
    case ExprKind::Literal: return e.literal;
    case ExprKind::Name: return lookup(e.name);
    case ExprKind::List: case ExprKind::Tuple: {
      std::vector<Value> items;
      for (const auto& a : e.args) items.push_back(eval(*a));
      return Value::list(std::move(items), e.kind == ExprKind::Tuple);
    }
    case ExprKind::Dict: {
      std::vector<std::pair<std::string, Value>> items;
      bool client_keys = false;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value k = eval(*e.args[i]);
        if (!k.is_string()) fail("only string keys are supported in dict literals");
        client_keys = client_keys || !k.taint().empty();
        Value v = eval(*e.args[i + 1]);
        bool replaced = false;
        for (auto& [key, val] : items) {
          if (key == k.as_string()) {
            val = v;
            replaced = true;
          }
        }
        if (!replaced) items.emplace_back(k.as_string(), std::move(v));
      }
      return Value::dict(std::move(items), client_keys);
    }
    case ExprKind::GetAttr: return get_attribute(eval(*e.args[0]), e.name);
    case ExprKind::GetItem: {
      Value obj = eval(*e.args[0]);
      return get_item(obj, eval(*e.args[1]));
    }
    case ExprKind::Slice: {
      Value obj = eval(*e.args[0]);
      auto part = [&](size_t i) { return e.args[i] ? eval(*e.args[i]) : Value(None{}); };
      return get_slice(obj, part(1), part(2), part(3));
    }
    case ExprKind::Call: {
      Value callee = eval(*e.args[0]);
      CallArgs args = eval_args(e, 1);
      rt_.line = e.line;
      return rt_.call(callee, args);
    }
    case ExprKind::Filter: {
      Value subject = eval(*e.args[0]);
      CallArgs args = eval_args(e, 1);
      rt_.line = e.line;
      return apply_filter(rt_, e.name, subject, args);
    }
    case ExprKind::Test: {
      Value subject = eval(*e.args[0]);
      CallArgs args = eval_args(e, 1);
      rt_.line = e.line;
      return Value(apply_test(rt_, e.name, subject, args));
    }
    case ExprKind::Unary: {
      Value v = eval(*e.args[0]);
      if (v.is_undefined()) fail_undefined(v);
      if (!v.is_number()) fail("bad operand type for unary {}: '{}'", e.name, v.type_name());
      if (e.name == "+") return v.is_bool() ? Value(static_cast<int64_t>(v.as_bool())) : v;
      if (v.is_float()) return Value(-v.as_float());
      int64_t i = v.is_int() ? v.as_int() : v.as_bool();
      if (i == INT64_MIN) fail("integer overflow");
      return Value(-i);
    }
    case ExprKind::Not: return Value(!truthy(eval(*e.args[0])));
    case ExprKind::And: {
      Value a = eval(*e.args[0]);
      return truthy(a) ? eval(*e.args[1]) : a;
    }
    case ExprKind::Or: {
      Value a = eval(*e.args[0]);
      return truthy(a) ? a : eval(*e.args[1]);
    }
    case ExprKind::Cond: {
      if (truthy(eval(*e.args[1]))) return eval(*e.args[0]);
      if (e.args[2]) return eval(*e.args[2]);
      return Value::undefined("the inline if-expression evaluated to false and no else section was defined");
    }
    case ExprKind::Binary: {
      Value a = eval(*e.args[0]);
      Value b = eval(*e.args[1]);
      rt_.line = e.line;
      return eval_binary(e.name, a, b);
    }
  }
  fail("unknown expression");
}

}  // namespace lumen::chat
