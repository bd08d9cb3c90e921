// Statements: template text, {{ }} prints and the {% %} tags Lumen runs (if / for / set /
// macro / filter / break / continue / generation); any other tag is an error naming it.
#include "chat/parser.h"
#include "chat/parser_state.h"

namespace lumen::chat {
namespace parse_detail {


// Parses until one of `ends` opens a block tag; `end` receives which (tag left unconsumed
// after its name). With no ends, runs to the end of the template.
Body Parser::parse_body(std::initializer_list<std::string_view> ends, std::string& end) {
  DepthGuard guard(*this);
  Body body;
  while (true) {
    const Token& tok = cur();
    if (tok.kind == TokenKind::End) {
      if (ends.size() != 0) {
        error("unexpected end of template, expected '" + std::string(*ends.begin()) + "'");
      }
      return body;
    }
    if (tok.kind == TokenKind::Data) {
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::Text;
      s->line = tok.line;
      s->text = tok.text;
      body.push_back(std::move(s));
      next();
    } else if (tok.kind == TokenKind::VarBegin) {
      next();
      auto s = std::make_unique<Stmt>();
      s->kind = StmtKind::Print;
      s->line = tok.line;
      s->expr = parse_tuple(true);
      if (cur().kind != TokenKind::VarEnd) error("expected end of print statement, got " + describe());
      next();
      body.push_back(std::move(s));
    } else if (tok.kind == TokenKind::BlockBegin) {
      next();
      if (cur().kind != TokenKind::Name) error("expected a statement name, got " + describe());
      for (auto e : ends) {
        if (cur().text == e) {
          end = cur().text;
          next();
          return body;
        }
      }
      body.push_back(parse_statement());
    } else {
      error("unexpected " + describe());
    }
  }
}

StmtPtr Parser::parse_statement() {
  auto s = std::make_unique<Stmt>();
  s->line = cur().line;
  std::string tag = cur().text;
  next();
  if (tag == "if") return parse_if(std::move(s));
  if (tag == "for") return parse_for(std::move(s));
  if (tag == "set") return parse_set(std::move(s));
  if (tag == "macro") return parse_macro(std::move(s));
  if (tag == "break" || tag == "continue") {
    s->kind = tag == "break" ? StmtKind::Break : StmtKind::Continue;
    expect_block_end();
    return s;
  }
  if (tag == "filter") {
    s->kind = StmtKind::FilterBlock;
    parse_filter_chain(s->filters, true);
    expect_block_end();
    std::string end;
    s->body = parse_body({"endfilter"}, end);
    expect_block_end();
    return s;
  }
  if (tag == "generation") {  // transformers' AssistantTracker: marks text, renders it as is
    s->kind = StmtKind::Scope;
    expect_block_end();
    std::string end;
    s->body = parse_body({"endgeneration"}, end);
    expect_block_end();
    return s;
  }
  fail("template line {}: unsupported or unknown tag '{}'", s->line, tag);
}

StmtPtr Parser::parse_if(StmtPtr s) {
  s->kind = StmtKind::If;
  ExprPtr cond = parse_tuple(false);
  while (true) {
    expect_block_end();
    std::string end;
    Body body = parse_body({"elif", "else", "endif"}, end);
    s->branches.emplace_back(std::move(cond), std::move(body));
    if (end == "elif") {
      cond = parse_tuple(false);
      continue;
    }
    if (end == "else") {
      expect_block_end();
      Body else_body = parse_body({"endif"}, end);
      s->branches.emplace_back(nullptr, std::move(else_body));
    }
    expect_block_end();
    return s;
  }
}

void Parser::parse_targets(std::vector<std::string>& names) {
  bool paren = skip_op("(");
  do {
    names.push_back(expect_name());
  } while (skip_op(",") && cur().kind == TokenKind::Name);
  if (paren) expect_op(")");
}

StmtPtr Parser::parse_for(StmtPtr s) {
  s->kind = StmtKind::For;
  parse_targets(s->targets);
  if (!skip_name("in")) error("expected 'in', got " + describe());
  s->expr = parse_tuple(false);
  if (skip_name("if")) s->condition = parse_expression(true);
  if (is_name("recursive")) error("recursive loops are not supported");
  expect_block_end();
  std::string end;
  s->body = parse_body({"else", "endfor"}, end);
  if (end == "else") {
    expect_block_end();
    s->else_body = parse_body({"endfor"}, end);
  }
  expect_block_end();
  return s;
}

StmtPtr Parser::parse_set(StmtPtr s) {
  if (cur().kind == TokenKind::Name && peek().kind == TokenKind::Operator && peek().text == ".") {
    s->targets.push_back(expect_name());
    next();
    s->target_attr = expect_name();
  } else {
    parse_targets(s->targets);
  }
  if (skip_op("=")) {
    s->kind = StmtKind::Set;
    s->expr = parse_tuple(true);
    expect_block_end();
    return s;
  }
  if (!s->target_attr.empty() || s->targets.size() != 1) error("expected '='");
  s->kind = StmtKind::SetBlock;
  parse_filter_chain(s->filters, false);
  expect_block_end();
  std::string end;
  s->body = parse_body({"endset"}, end);
  expect_block_end();
  return s;
}

StmtPtr Parser::parse_macro(StmtPtr s) {
  s->kind = StmtKind::Macro;
  s->text = expect_name();
  expect_op("(");
  while (!is_op(")")) {
    if (!s->params.empty()) expect_op(",");
    std::string name = expect_name();
    ExprPtr def;
    if (skip_op("=")) def = parse_expression(true);
    s->params.emplace_back(std::move(name), std::move(def));
  }
  next();
  expect_block_end();
  std::string end;
  s->body = parse_body({"endmacro"}, end);
  if (cur().kind == TokenKind::Name) next();  // {% endmacro name %}
  expect_block_end();
  return s;
}

// `f(args) | g` after `filter`, `| f | g` after `set x`: Filter nodes whose subject (args[0])
// is filled in when the block has rendered.
void Parser::parse_filter_chain(std::vector<ExprPtr>& out, bool start_inline) {
  bool need_pipe = !start_inline;
  while (true) {
    if (need_pipe && !skip_op("|")) return;
    need_pipe = true;
    auto f = node(ExprKind::Filter, cur().line);
    f->args.push_back(nullptr);
    f->name = expect_name();
    if (skip_op("(")) parse_call_args(*f);
    out.push_back(std::move(f));
  }
}

}  // namespace parse_detail

Body parse_template(std::string_view source) {
  return parse_detail::Parser(tokenize_template(source)).parse_all();
}

}  // namespace lumen::chat
