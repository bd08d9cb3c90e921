// Binary operators with Python's semantics: int arithmetic that fails on overflow rather than
// wrapping (Python's ints are unbounded; a chat template never needs more than 64 bits), true
// division, floor division and modulo that round toward negative infinity, sequence
// concatenation and repetition under the output size limit, and `~` string concatenation.
#include <cmath>

#include "chat/builtins.h"
#include "chat/interpreter.h"
#include "chat/taint.h"
#include "util/error.h"

namespace lumen::chat {

namespace {

int64_t as_i64(const Value& v) { return v.is_int() ? v.as_int() : v.as_bool(); }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  fail("unsupported operand type(s) for {}: '{}' and '{}'", op, a.type_name(), b.type_name());
}

Value repeat(Runtime& rt, const Value& seq, int64_t times) {
  if (times <= 0) return seq.is_string() ? Value(std::string()) : Value::list({});
  auto count = static_cast<size_t>(times);
  if (seq.is_string()) {
    const std::string& s = seq.as_string();
    if (!s.empty() && count > rt.limits().max_output_bytes / s.size()) rt.check_size(SIZE_MAX);
    std::string out;
    out.reserve(s.size() * count);
    for (size_t i = 0; i < count; ++i) out += s;
    return taint_result(Value(std::move(out)), !seq.taint().empty());
  }
  const auto& items = seq.as_list().items;
  // Strings are held by value (lists and dicts by pointer), so each repetition copies the
  // items' string bytes: bound the copy by bytes, not by item count, or ['x' * 1000000] * 1000
  // would build a gigabyte before any output check.
  size_t bytes_per_repeat = items.size();
  for (const Value& item : items) {
    if (item.is_string()) bytes_per_repeat += item.as_string().size();
  }
  if (bytes_per_repeat > 0 && count > rt.limits().max_output_bytes / bytes_per_repeat) rt.check_size(SIZE_MAX);
  // The items themselves: [0] * 10000000 copies no string but builds 10 M values.
  require_room(count, items.size() * sizeof(Value));
  std::vector<Value> out;
  for (size_t i = 0; i < count; ++i) out.insert(out.end(), items.begin(), items.end());
  return Value::list(std::move(out), seq.as_list().tuple);
}

double float_mod(double x, double y) {
  double m = std::fmod(x, y);
  if (m != 0 && ((m < 0) != (y < 0))) m += y;
  return m;
}

}  // namespace

Value Interpreter::eval_binary(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return Value(equals(a, b));
  if (op == "!=") return Value(!equals(a, b));
  if (op == "<") return Value(compare(a, b) < 0);
  if (op == "<=") return Value(compare(a, b) <= 0);
  if (op == ">") return Value(compare(a, b) > 0);
  if (op == ">=") return Value(compare(a, b) >= 0);
  if (op == "in") return Value(value_in(a, b));
  if (op == "not in") return Value(!value_in(a, b));
  if (op == "~") {
    TaintedText out;
    append_printed(out, a);
    rt_.check_size(out.text.size());
    append_printed(out, b);
    rt_.check_size(out.text.size());
    return std::move(out).value();
  }
  bool ints = (a.is_int() || a.is_bool()) && (b.is_int() || b.is_bool());
  bool nums = a.is_number() && b.is_number();
  if (op == "+") {
    if (a.is_string() && b.is_string()) {
      rt_.check_size(a.as_string().size() + b.as_string().size());
      TaintedText out;
      out.text.reserve(a.as_string().size() + b.as_string().size());
      out.append(a.as_string(), a.taint());
      out.append(b.as_string(), b.taint());
      return std::move(out).value();
    }
    if (a.is_list() && b.is_list() && a.as_list().tuple == b.as_list().tuple) {
      std::vector<Value> items = a.as_list().items;
      rt_.check_size(items.size() + b.as_list().items.size());
      items.insert(items.end(), b.as_list().items.begin(), b.as_list().items.end());
      return Value::list(std::move(items), a.as_list().tuple);
    }
    if (ints) {
      int64_t r;
      if (__builtin_add_overflow(as_i64(a), as_i64(b), &r)) fail("integer overflow");
      return Value(r);
    }
    if (nums) return Value(a.as_number() + b.as_number());
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) {
      int64_t r;
      if (__builtin_sub_overflow(as_i64(a), as_i64(b), &r)) fail("integer overflow");
      return Value(r);
    }
    if (nums) return Value(a.as_number() - b.as_number());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) {
      int64_t r;
      if (__builtin_mul_overflow(as_i64(a), as_i64(b), &r)) fail("integer overflow");
      return Value(r);
    }
    if (nums) return Value(a.as_number() * b.as_number());
    if ((a.is_string() || a.is_list()) && (b.is_int() || b.is_bool())) return repeat(rt_, a, as_i64(b));
    if ((b.is_string() || b.is_list()) && (a.is_int() || a.is_bool())) return repeat(rt_, b, as_i64(a));
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_number() == 0) fail("division by zero");
    return Value(a.as_number() / b.as_number());
  }
  if (op == "//" || op == "%") {
    if (!nums) {
      if (op == "%" && a.is_string()) fail("printf-style string formatting (%) is not supported");
      unsupported(op, a, b);
    }
    if (b.as_number() == 0) fail("integer division or modulo by zero");
    if (ints) {
      int64_t x = as_i64(a), y = as_i64(b);
      if (x == INT64_MIN && y == -1) fail("integer overflow");
      int64_t q = x / y, r = x % y;
      if (r != 0 && ((r < 0) != (y < 0))) {
        --q;
        r += y;
      }
      return Value(op == "//" ? q : r);
    }
    double x = a.as_number(), y = b.as_number();
    double m = float_mod(x, y);
    if (op == "%") return Value(m);
    // CPython's float_floor_div: (x - mod) / y is an exact integer up to rounding.
    double div = (x - std::fmod(x, y)) / y;
    if (std::fmod(x, y) != 0 && ((y < 0) != (std::fmod(x, y) < 0))) div -= 1.0;
    double floordiv = std::floor(div);
    if (div - floordiv > 0.5) floordiv += 1.0;
    return Value(floordiv);
  }
  if (op == "**") {
    if (ints && as_i64(b) >= 0) {
      int64_t base = as_i64(a), e = as_i64(b), r = 1;
      if (base == 0 || base == 1) return Value(e == 0 ? int64_t{1} : base);
      if (base == -1) return Value(e % 2 == 0 ? int64_t{1} : int64_t{-1});
      // |base| >= 2 overflows within 63 multiplications, so this loop is short.
      while (e-- > 0) {
        if (__builtin_mul_overflow(r, base, &r)) fail("integer overflow");
      }
      return Value(r);
    }
    if (nums) return Value(std::pow(a.as_number(), b.as_number()));
    unsupported(op, a, b);
  }
  fail("unknown operator {}", op);
}

}  // namespace lumen::chat
