// Expressions, one function per jinja2 precedence level, lowest first.
#include <charconv>
#include <cmath>

#include "chat/parser_state.h"

namespace lumen::chat::parse_detail {


ExprPtr Parser::parse_tuple(bool with_condexpr) {
  int line = cur().line;
  ExprPtr first = parse_expression(with_condexpr);
  if (!is_op(",")) return first;
  auto t = node(ExprKind::Tuple, line);
  t->args.push_back(std::move(first));
  while (skip_op(",")) {
    if (cur().kind == TokenKind::VarEnd || cur().kind == TokenKind::BlockEnd || is_op(")") ||
        is_op("=")) {
      break;
    }
    t->args.push_back(parse_expression(with_condexpr));
  }
  return t;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  DepthGuard guard(*this);
  return with_condexpr ? parse_condexpr() : parse_or();
}

ExprPtr Parser::parse_condexpr() {
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    auto c = node(ExprKind::Cond, expr->line);
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_condexpr() : nullptr;
    c->args.push_back(std::move(expr));
    c->args.push_back(std::move(test));
    c->args.push_back(std::move(otherwise));
    expr = std::move(c);
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (skip_name("or")) left = binary(ExprKind::Or, "or", std::move(left), parse_and());
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (skip_name("and")) left = binary(ExprKind::And, "and", std::move(left), parse_not());
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    auto n = node(ExprKind::Not, cur().line);
    next();
    DepthGuard guard(*this);
    n->args.push_back(parse_not());
    return n;
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  ExprPtr left = parse_math1();
  ExprPtr result, previous_right;
  while (true) {
    std::string op;
    if (cur().kind == TokenKind::Operator &&
        (cur().text == "==" || cur().text == "!=" || cur().text == "<" || cur().text == "<=" ||
         cur().text == ">" || cur().text == ">=")) {
      op = cur().text;
      next();
    } else if (is_name("in")) {
      op = "in";
      next();
    } else if (is_name("not") && peek().kind == TokenKind::Name && peek().text == "in") {
      op = "not in";
      next();
      next();
    } else {
      break;
    }
    // a < b < c means (a < b) and (b < c); the middle operand is evaluated twice, which is
    // harmless because template expressions have no side effects.
    ExprPtr right = parse_math1();
    ExprPtr lhs = result ? std::move(previous_right) : std::move(left);
    previous_right = clone_for_chain(*right);
    ExprPtr cmp = binary(ExprKind::Binary, op, std::move(lhs), std::move(right));
    result = result ? binary(ExprKind::And, "and", std::move(result), std::move(cmp))
                    : std::move(cmp);
  }
  return result ? std::move(result) : std::move(left);
}

// Chained comparisons need their middle operand twice; expressions are trees, so copy it.
ExprPtr Parser::clone_for_chain(const Expr& e) {
  auto c = node(e.kind, e.line);
  c->literal = e.literal;
  c->name = e.name;
  for (const auto& a : e.args) c->args.push_back(a ? clone_for_chain(*a) : nullptr);
  for (const auto& [k, v] : e.kwargs) c->kwargs.emplace_back(k, v ? clone_for_chain(*v) : nullptr);
  return c;
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    std::string op = cur().text;
    next();
    left = binary(ExprKind::Binary, op, std::move(left), parse_concat());
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (skip_op("~")) left = binary(ExprKind::Binary, "~", std::move(left), parse_math2());
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    std::string op = cur().text;
    next();
    left = binary(ExprKind::Binary, op, std::move(left), parse_pow());
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (skip_op("**")) left = binary(ExprKind::Binary, "**", std::move(left), parse_unary(true));
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  DepthGuard guard(*this);
  ExprPtr n;
  if (is_op("-") || is_op("+")) {
    n = node(ExprKind::Unary, cur().line);
    n->name = cur().text;
    next();
    n->args.push_back(parse_unary(false));
  } else {
    n = parse_primary();
  }
  n = parse_postfix(std::move(n));
  if (with_filter) n = parse_filter_expr(std::move(n));
  return n;
}

ExprPtr Parser::parse_primary() {
  const Token& tok = cur();
  int line = tok.line;
  if (tok.kind == TokenKind::Name) {
    auto n = node(ExprKind::Literal, line);
    if (tok.text == "true" || tok.text == "True") n->literal = Value(true);
    else if (tok.text == "false" || tok.text == "False") n->literal = Value(false);
    else if (tok.text == "none" || tok.text == "None") n->literal = Value(None{});
    else {
      n->kind = ExprKind::Name;
      n->name = tok.text;
    }
    next();
    return n;
  }
  if (tok.kind == TokenKind::String) {
    std::string s;
    while (cur().kind == TokenKind::String) {
      s += cur().text;
      next();
    }
    auto n = node(ExprKind::Literal, line);
    n->literal = Value(std::move(s));
    return n;
  }
  if (tok.kind == TokenKind::Integer || tok.kind == TokenKind::Float) {
    auto n = node(ExprKind::Literal, line);
    n->literal = parse_number(tok);
    next();
    return n;
  }
  if (skip_op("(")) {
    if (skip_op(")")) return node(ExprKind::Tuple, line);
    ExprPtr first = parse_expression(true);
    if (skip_op(")")) return first;
    auto t = node(ExprKind::Tuple, line);
    t->args.push_back(std::move(first));
    while (skip_op(",")) {
      if (is_op(")")) break;
      t->args.push_back(parse_expression(true));
    }
    expect_op(")");
    return t;
  }
  if (skip_op("[")) {
    auto l = node(ExprKind::List, line);
    while (!skip_op("]")) {
      if (!l->args.empty()) expect_op(",");
      if (skip_op("]")) break;
      l->args.push_back(parse_expression(true));
    }
    return l;
  }
  if (skip_op("{")) {
    auto d = node(ExprKind::Dict, line);
    while (!skip_op("}")) {
      if (!d->args.empty()) expect_op(",");
      if (skip_op("}")) break;
      d->args.push_back(parse_expression(true));
      expect_op(":");
      d->args.push_back(parse_expression(true));
    }
    return d;
  }
  error("unexpected " + describe());
}

Value Parser::parse_number(const Token& tok) const {
  const std::string& s = tok.text;
  if (tok.kind == TokenKind::Integer) {
    int64_t v = 0;
    auto res = std::from_chars(s.data(), s.data() + s.size(), v);
    if (res.ec != std::errc() || res.ptr != s.data() + s.size()) error("integer literal too large");
    return Value(v);
  }
  double d = 0;
  auto res = std::from_chars(s.data(), s.data() + s.size(), d);
  if (res.ec == std::errc::result_out_of_range) return Value(s.find("e-") != std::string::npos ? 0.0 : HUGE_VAL);
  if (res.ec != std::errc()) error("bad float literal");
  return Value(d);
}

ExprPtr Parser::parse_postfix(ExprPtr n) {
  while (true) {
    if (is_op(".")) {
      int line = cur().line;
      next();
      if (cur().kind == TokenKind::Name) {
        auto a = node(ExprKind::GetAttr, line);
        a->name = cur().text;
        next();
        a->args.push_back(std::move(n));
        n = std::move(a);
      } else if (cur().kind == TokenKind::Integer) {
        auto g = node(ExprKind::GetItem, line);
        auto idx = node(ExprKind::Literal, line);
        idx->literal = parse_number(cur());
        next();
        g->args.push_back(std::move(n));
        g->args.push_back(std::move(idx));
        n = std::move(g);
      } else {
        error("expected name or number after '.'");
      }
    } else if (is_op("[")) {
      n = parse_subscript(std::move(n));
    } else if (is_op("(")) {
      n = parse_call(std::move(n));
    } else {
      return n;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr n) {
  while (true) {
    if (is_op("|")) {
      next();
      auto f = node(ExprKind::Filter, cur().line);
      f->name = expect_name();
      f->args.push_back(std::move(n));
      if (skip_op("(")) parse_call_args(*f);
      n = std::move(f);
    } else if (is_name("is")) {
      next();
      bool negated = skip_name("not");
      auto t = node(ExprKind::Test, cur().line);
      t->name = expect_name();
      t->args.push_back(std::move(n));
      if (skip_op("(")) {
        parse_call_args(*t);
      } else if ((cur().kind == TokenKind::Name || cur().kind == TokenKind::String ||
                  cur().kind == TokenKind::Integer || cur().kind == TokenKind::Float ||
                  is_op("[") || is_op("{")) &&
                 !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) error("you cannot chain multiple tests with is");
        t->args.push_back(parse_postfix(parse_primary()));
      }
      n = std::move(t);
      if (negated) {
        auto no = node(ExprKind::Not, n->line);
        no->args.push_back(std::move(n));
        n = std::move(no);
      }
    } else if (is_op("(")) {
      n = parse_call(std::move(n));
    } else {
      return n;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr n) {
  int line = cur().line;
  expect_op("[");
  std::vector<ExprPtr> parts;
  bool slice = false;
  ExprPtr slice_parts[3];
  // Only a single subscript or a single slice: tuple keys have no use on JSON data.
  if (!is_op(":")) slice_parts[0] = parse_expression(true);
  if (skip_op(":")) {
    slice = true;
    if (!is_op("]") && !is_op(":")) slice_parts[1] = parse_expression(true);
    if (skip_op(":") && !is_op("]")) slice_parts[2] = parse_expression(true);
  }
  expect_op("]");
  auto g = node(slice ? ExprKind::Slice : ExprKind::GetItem, line);
  g->args.push_back(std::move(n));
  g->args.push_back(std::move(slice_parts[0]));
  if (slice) {
    g->args.push_back(std::move(slice_parts[1]));
    g->args.push_back(std::move(slice_parts[2]));
  } else if (!g->args[1]) {
    error("expected an expression in subscript");
  }
  return g;
}

ExprPtr Parser::parse_call(ExprPtr callee) {
  auto c = node(ExprKind::Call, cur().line);
  expect_op("(");
  c->args.push_back(std::move(callee));
  parse_call_args(*c);
  return c;
}

// After '(' : positional and keyword arguments up to and including ')'.
void Parser::parse_call_args(Expr& call) {
  bool first = true;
  while (!skip_op(")")) {
    if (!first) {
      expect_op(",");
      if (skip_op(")")) return;
    }
    first = false;
    if (is_op("*") || is_op("**")) error("*args and **kwargs in calls are not supported");
    if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == "=") {
      std::string key = cur().text;
      next();
      next();
      call.kwargs.emplace_back(std::move(key), parse_expression(true));
    } else {
      if (!call.kwargs.empty()) error("positional argument after keyword argument");
      call.args.push_back(parse_expression(true));
    }
  }
}

std::vector<Token> t_;
size_t i_ = 0;
int depth_ = 0;

}  // namespace lumen::chat::parse_detail
