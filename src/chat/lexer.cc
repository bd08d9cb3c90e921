#include "chat/lexer.h"

#include <array>

#include "chat/py_string.h"
#include "util/error.h"

namespace lumen::chat {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// jinja2 reads string literals through Python's unicode-escape codec.
std::string unescape_string(std::string_view body, int line) {
  std::string out;
  size_t i = 0;
  auto hex = [&](size_t digits) -> char32_t {
    if (i + digits > body.size()) fail("template line {}: truncated escape in string", line);
    char32_t cp = 0;
    for (size_t k = 0; k < digits; ++k) {
      char c = body[i + k];
      int d = is_digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10
              : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0) fail("template line {}: bad escape in string", line);
      cp = cp * 16 + static_cast<char32_t>(d);
    }
    i += digits;
    return cp;
  };
  while (i < body.size()) {
    char c = body[i++];
    if (c != '\\' || i >= body.size()) {
      out += c;
      continue;
    }
    char e = body[i++];
    switch (e) {
      case '\n': break;  // line continuation
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x': utf8_append(out, hex(2)); break;
      case 'u': case 'U': {
        char32_t cp = hex(e == 'u' ? 4 : 8);
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
          fail("template line {}: unsupported code point escape in string", line);
        }
        utf8_append(out, cp);
        break;
      }
      default:
        if (e >= '0' && e <= '7') {
          char32_t cp = static_cast<char32_t>(e - '0');
          for (int k = 0; k < 2 && i < body.size() && body[i] >= '0' && body[i] <= '7'; ++k) {
            cp = cp * 8 + static_cast<char32_t>(body[i++] - '0');
          }
          utf8_append(out, cp);
        } else {
          out += '\\';
          out += e;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    tokens_.push_back({TokenKind::End, "", line_});
    return std::move(tokens_);
  }

 private:
  void emit(TokenKind kind, std::string text, int line) {
    tokens_.push_back({kind, std::move(text), line});
  }

  void advance_to(size_t to) {
    for (size_t i = pos_; i < to; ++i) line_ += src_[i] == '\n';
    pos_ = to;
  }

  // Whitespace control on the text that precedes a tag.
  std::string strip_before(std::string text, char sign, bool is_variable) const {
    if (sign == '-') return py_strip(text, std::nullopt, false, true);
    if (sign == '+' || is_variable) return text;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return text;
    std::string_view tail = std::string_view(text).substr(l_pos);
    if (tail.empty()) return text;
    size_t p = 0;
    while (p < tail.size()) {
      if (!py_isspace(utf8_next(tail, p))) return text;
    }
    text.resize(l_pos);
    return text;
  }

  // After a closing tag: `-` eats all following whitespace, otherwise trim_blocks eats one
  // newline (block and comment tags only; `+` keeps it).
  void consume_after_close(char sign, bool trim_newline) {
    size_t p = pos_;
    if (sign == '-') {
      while (p < src_.size()) {
        size_t q = p;
        if (!py_isspace(utf8_next(src_, q))) break;
        p = q;
      }
    } else if (sign != '+' && trim_newline && p < src_.size() && src_[p] == '\n') {
      ++p;
    }
    advance_to(p);
  }

  void lex_root() {
    size_t open = pos_;
    while (true) {
      open = src_.find('{', open);
      if (open == std::string::npos || open + 1 >= src_.size()) {
        emit(TokenKind::Data, src_.substr(pos_), line_);
        advance_to(src_.size());
        return;
      }
      char kind = src_[open + 1];
      if (kind == '{' || kind == '%' || kind == '#') break;
      ++open;
    }
    char kind = src_[open + 1];
    char sign = open + 2 < src_.size() && (src_[open + 2] == '-' || src_[open + 2] == '+')
                    ? src_[open + 2] : '\0';
    std::string text = strip_before(src_.substr(pos_, open - pos_), sign, kind == '{');
    if (!text.empty()) emit(TokenKind::Data, std::move(text), line_);
    advance_to(open + 2 + (sign ? 1 : 0));
    line_starting_ = false;
    if (kind == '#') return lex_comment();
    if (kind == '%' && try_raw()) return;
    emit(kind == '{' ? TokenKind::VarBegin : TokenKind::BlockBegin, "", line_);
    lex_inside(kind == '{');
  }

  void lex_comment() {
    int start_line = line_;
    size_t end = src_.find("#}", pos_);
    if (end == std::string::npos) fail("template line {}: missing end of comment tag", start_line);
    char sign = end > pos_ && (src_[end - 1] == '-' || src_[end - 1] == '+') ? src_[end - 1] : '\0';
    advance_to(end + 2);
    consume_after_close(sign, true);
    line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
  }

  // {% raw %}...{% endraw %}: the body is literal text.
  bool try_raw() {
    size_t p = pos_;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
    if (src_.compare(p, 3, "raw") != 0 || (p + 3 < src_.size() && is_name_char(src_[p + 3]))) {
      return false;
    }
    p += 3;
    while (p < src_.size() && (src_[p] == ' ' || src_[p] == '\t' || src_[p] == '\n')) ++p;
    char open_sign = p < src_.size() && src_[p] == '-' ? '-' : '\0';
    if (open_sign) ++p;
    if (src_.compare(p, 2, "%}") != 0) return false;
    advance_to(p + 2);
    consume_after_close(open_sign, false);
    size_t search = pos_;
    while (true) {
      size_t tag = src_.find("{%", search);
      if (tag == std::string::npos) fail("template line {}: missing {{% endraw %}}", line_);
      size_t q = tag + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : '\0';
      if (sign) ++q;
      while (q < src_.size() && (src_[q] == ' ' || src_[q] == '\t' || src_[q] == '\n')) ++q;
      if (src_.compare(q, 6, "endraw") != 0) {
        search = tag + 2;
        continue;
      }
      q += 6;
      while (q < src_.size() && (src_[q] == ' ' || src_[q] == '\t' || src_[q] == '\n')) ++q;
      char close_sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : '\0';
      if (close_sign) ++q;
      if (src_.compare(q, 2, "%}") != 0) fail("template line {}: malformed endraw tag", line_);
      line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
      std::string body = strip_before(src_.substr(pos_, tag - pos_), sign, false);
      if (!body.empty()) emit(TokenKind::Data, std::move(body), line_);
      advance_to(q + 2);
      consume_after_close(close_sign, true);
      line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
      return true;
    }
  }

  void lex_inside(bool variable) {
    int start_line = line_;
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) {
        fail("template line {}: unexpected end of template inside a {} tag", start_line,
             variable ? "{{ }}" : "{% %}");
      }
      char c = src_[pos_];
      if (balance.empty()) {
        char sign = (c == '-' || c == '+') ? c : '\0';
        size_t at = pos_ + (sign ? 1 : 0);
        const char* close = variable ? "}}" : "%}";
        if (src_.compare(at, 2, close) == 0 && !(variable && sign == '+')) {
          advance_to(at + 2);
          emit(variable ? TokenKind::VarEnd : TokenKind::BlockEnd, "", line_);
          consume_after_close(sign, !variable);
          line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
          return;
        }
      }
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
        advance_to(pos_ + 1);
      } else if (is_digit(c) && !(pos_ > 0 && src_[pos_ - 1] == '.')) {
        lex_number();
      } else if (is_digit(c)) {
        lex_digits_only();
      } else if (is_name_start(c)) {
        size_t end = pos_;
        while (end < src_.size() && is_name_char(src_[end])) ++end;
        emit(TokenKind::Name, src_.substr(pos_, end - pos_), line_);
        advance_to(end);
      } else if (c == '\'' || c == '"') {
        lex_string(c);
      } else {
        lex_operator(balance);
      }
    }
  }

  // Digits with single underscores between them, as jinja2's integer rule.
  size_t scan_digits(size_t p) const {
    if (p >= src_.size() || !is_digit(src_[p])) return p;
    while (p < src_.size()) {
      if (is_digit(src_[p])) ++p;
      else if (src_[p] == '_' && p + 1 < src_.size() && is_digit(src_[p + 1])) ++p;
      else break;
    }
    return p;
  }

  void lex_digits_only() {
    size_t end = scan_digits(pos_);
    emit(TokenKind::Integer, without_underscores(pos_, end), line_);
    advance_to(end);
  }

  std::string without_underscores(size_t from, size_t to) const {
    std::string s;
    for (size_t i = from; i < to; ++i) if (src_[i] != '_') s += src_[i];
    return s;
  }

  void lex_number() {
    size_t end = scan_digits(pos_);
    bool is_float = false;
    if (end + 1 < src_.size() && src_[end] == '.' && is_digit(src_[end + 1])) {
      end = scan_digits(end + 1);
      is_float = true;
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t p = end + 1;
      if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) ++p;
      size_t digits_end = scan_digits(p);
      if (digits_end > p) {
        end = digits_end;
        is_float = true;
      }
    }
    emit(is_float ? TokenKind::Float : TokenKind::Integer, without_underscores(pos_, end), line_);
    advance_to(end);
  }

  void lex_string(char quote) {
    int line = line_;
    size_t p = pos_ + 1;
    while (p < src_.size() && src_[p] != quote) p += src_[p] == '\\' ? 2 : 1;
    if (p >= src_.size()) fail("template line {}: unterminated string", line);
    emit(TokenKind::String, unescape_string(std::string_view(src_).substr(pos_ + 1, p - pos_ - 1), line),
         line);
    advance_to(p + 1);
  }

  void lex_operator(std::vector<char>& balance) {
    static constexpr std::array<std::string_view, 4> kTwo = {"//", "**", "==", "!="};
    static constexpr std::array<std::string_view, 2> kTwoCmp = {">=", "<="};
    std::string_view rest = std::string_view(src_).substr(pos_);
    for (auto op : kTwo) if (rest.substr(0, 2) == op) return emit_op(std::string(op));
    for (auto op : kTwoCmp) if (rest.substr(0, 2) == op) return emit_op(std::string(op));
    char c = src_[pos_];
    static constexpr std::string_view kSingle = "+-*/%~[](){}<>=.:|,;";
    if (kSingle.find(c) == std::string_view::npos) {
      fail("template line {}: unexpected character '{}'", line_, std::string(1, c));
    }
    if (c == '(' || c == '[' || c == '{') {
      balance.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance.empty() || balance.back() != c) {
        fail("template line {}: unexpected '{}'", line_, std::string(1, c));
      }
      balance.pop_back();
    }
    emit_op(std::string(1, c));
  }

  void emit_op(std::string op) {
    size_t n = op.size();
    emit(TokenKind::Operator, std::move(op), line_);
    advance_to(pos_ + n);
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

}  // namespace

std::vector<Token> tokenize_template(std::string_view source) {
  return Lexer(normalize_newlines(source)).run();
}

}  // namespace lumen::chat
