#pragma once
// The parsed template: expression and statement nodes. One plain struct per category with a
// kind tag keeps the interpreter a pair of switches; each node remembers its line for errors.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/value.h"

namespace lumen::chat {

struct Expr;
struct Stmt;
using ExprPtr = std::unique_ptr<Expr>;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

enum class ExprKind {
  Literal,   // literal
  Name,      // name
  List,      // args = items
  Tuple,     // args = items
  Dict,      // args = key, value, key, value, ...
  GetAttr,   // args[0].name
  GetItem,   // args[0][args[1]]
  Slice,     // args[0][args[1]:args[2]:args[3]], missing parts are null
  Call,      // args[0](args[1..], kwargs)
  Filter,    // args[0] | name(args[1..], kwargs)
  Test,      // args[0] is name(args[1..], kwargs)
  Unary,     // name in {"-", "+"}: op args[0]
  Not,       // not args[0]
  Binary,    // args[0] name args[1]: + - * / // % ** ~ == != < <= > >= in "not in"
  And,       // args[0] and args[1]
  Or,        // args[0] or args[1]
  Cond,      // args[0] if args[1] else args[2] (args[2] may be null)
};

struct Expr {
  ExprKind kind;
  int line = 0;
  Value literal;
  std::string name;
  std::vector<ExprPtr> args;
  std::vector<std::pair<std::string, ExprPtr>> kwargs;
};

enum class StmtKind {
  Text,         // text
  Print,        // {{ expr }}
  If,           // branches: (condition or null for else, body)
  For,          // for targets in expr [if condition]: body [else else_body]
  Set,          // set targets (or target_object.attr) = expr
  SetBlock,     // {% set name %}body{% endset %}, then filters in `filters`
  Macro,        // macro name(params with defaults): body
  FilterBlock,  // {% filter f %}body{% endfilter %}
  Break,
  Continue,
  Scope,        // a body with no effect of its own ({% generation %})
};

struct Stmt {
  StmtKind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;
  ExprPtr condition;
  std::vector<std::pair<ExprPtr, Body>> branches;
  std::vector<std::string> targets;   // loop / set variable names
  std::string target_attr;            // Set: `ns.attr = ...` writes attribute target_attr
  std::vector<ExprPtr> filters;       // SetBlock / FilterBlock: Filter nodes with a null subject
  std::vector<std::pair<std::string, ExprPtr>> params;  // Macro: name, default (may be null)
  Body body;
  Body else_body;
};

}  // namespace lumen::chat
