#pragma once
// The parser's state and its two halves: parser_statements.cc (tags: if, for, set, macro, ...)
// and parser_expressions.cc (jinja2's expression grammar). Internal to the chat module.
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

#include "chat/ast.h"
#include "chat/lexer.h"
#include "util/error.h"

namespace lumen::chat::parse_detail {

// Deeply nested input (((((...))))) must fail cleanly, not exhaust the stack.
constexpr int kMaxNesting = 200;

inline ExprPtr node(ExprKind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

inline ExprPtr binary(ExprKind kind, std::string op, ExprPtr a, ExprPtr b) {
  auto e = node(kind, a->line);
  e->name = std::move(op);
  e->args.push_back(std::move(a));
  e->args.push_back(std::move(b));
  return e;
}


class Parser {
 public:
  explicit Parser(std::vector<Token> tokens) : t_(std::move(tokens)) {}

  Body parse_all() {
    std::string end;
    Body body = parse_body({}, end);
    return body;
  }

 private:
  // ---- token helpers ----
  const Token& cur() const { return t_[i_]; }
  const Token& peek(size_t k = 1) const { return t_[std::min(i_ + k, t_.size() - 1)]; }
  void next() { if (i_ + 1 < t_.size()) ++i_; }
  bool is_op(std::string_view op) const {
    return cur().kind == TokenKind::Operator && cur().text == op;
  }
  bool is_name(std::string_view name) const {
    return cur().kind == TokenKind::Name && cur().text == name;
  }
  bool skip_op(std::string_view op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool skip_name(std::string_view name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void error(const std::string& what) const {
    fail("template line {}: {}", cur().line, what);
  }
  std::string describe() const {
    switch (cur().kind) {
      case TokenKind::End: return "end of template";
      case TokenKind::VarEnd: return "end of print statement";
      case TokenKind::BlockEnd: return "end of statement block";
      case TokenKind::Data: return "template data";
      default: return "'" + cur().text + "'";
    }
  }
  void expect_op(std::string_view op) {
    if (!skip_op(op)) error("expected '" + std::string(op) + "', got " + describe());
  }
  std::string expect_name() {
    if (cur().kind != TokenKind::Name) error("expected a name, got " + describe());
    std::string name = cur().text;
    next();
    return name;
  }
  void expect_block_end() {
    if (cur().kind != TokenKind::BlockEnd) error("expected end of statement block, got " + describe());
    next();
  }

  struct DepthGuard {
    explicit DepthGuard(Parser& p) : p_(p) {
      if (++p_.depth_ > kMaxNesting) p_.error("template nests too deeply");
    }
    ~DepthGuard() { --p_.depth_; }
    Parser& p_;
  };


  // ---- statements (parser_statements.cc) ----
  Body parse_body(std::initializer_list<std::string_view> ends, std::string& end);
  StmtPtr parse_statement();
  StmtPtr parse_if(StmtPtr s);
  void parse_targets(std::vector<std::string>& names);
  StmtPtr parse_for(StmtPtr s);
  StmtPtr parse_set(StmtPtr s);
  StmtPtr parse_macro(StmtPtr s);
  void parse_filter_chain(std::vector<ExprPtr>& out, bool start_inline);

  // ---- expressions (parser_expressions.cc) ----
  ExprPtr parse_tuple(bool with_condexpr);
  ExprPtr parse_expression(bool with_condexpr);
  ExprPtr parse_condexpr();
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr clone_for_chain(const Expr& e);
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  Value parse_number(const Token& tok) const;
  ExprPtr parse_postfix(ExprPtr n);
  ExprPtr parse_filter_expr(ExprPtr n);
  ExprPtr parse_subscript(ExprPtr n);
  ExprPtr parse_call(ExprPtr callee);
  void parse_call_args(Expr& call);

  std::vector<Token> t_;
  size_t i_ = 0;
  int depth_ = 0;
};

}  // namespace lumen::chat::parse_detail
