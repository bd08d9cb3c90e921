#pragma once
// Executes a parsed template against a context of variables, writing the output string.
// Scoping follows jinja2: `set` at the top level writes the template's variables, each loop
// iteration gets a fresh scope (assignments inside do not survive it: use namespace()), and a
// macro sees its parameters plus the template's top-level variables.
#include <string>
#include <utility>
#include <vector>

#include "chat/ast.h"
#include "chat/runtime.h"
#include "chat/taint.h"

namespace lumen::chat {

using Scope = std::vector<std::pair<std::string, Value>>;

class Interpreter {
 public:
  Interpreter(Runtime& rt, Scope globals) : rt_(rt) { frames_.push_back(std::move(globals)); }

  // Renders `body` and returns the text; lumen::Error on a template error (message without the
  // line: the caller reads rt.line).
  TaintedText render(const Body& body);

 private:
  enum class Flow { Normal, Break, Continue };

  Flow exec_body(const Body& body, TaintedText& out);
  Flow exec(const Stmt& s, TaintedText& out);
  void exec_for(const Stmt& s, TaintedText& out);
  void exec_set(const Stmt& s, TaintedText& out);
  void define_macro(const Stmt& s);
  Value call_macro(const Stmt& s, const CallArgs& args);

  Value eval(const Expr& e);
  Value eval_binary(const std::string& op, const Value& a, const Value& b);
  CallArgs eval_args(const Expr& e, size_t first_positional);
  Value lookup(const std::string& name) const;
  void assign(const std::string& name, Value v);
  void bind_targets(const std::vector<std::string>& names, const Value& v);
  void append(TaintedText& out, const Value& v) const;

  Runtime& rt_;
  std::vector<Scope> frames_;
};

}  // namespace lumen::chat
