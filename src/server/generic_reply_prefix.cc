#include "server/generic_reply_prefix.h"

#include <optional>

namespace lumen::server {

namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  size_t at() const { return at_; }
  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) {
      ++at_;
    }
  }
  bool eat(char c) {
    skip_space();
    if (at_ >= text_.size() || text_[at_] != c) return false;
    ++at_;
    return true;
  }
  bool peek(char c) {
    skip_space();
    return at_ < text_.size() && text_[at_] == c;
  }

  // A string's body after its opening quote: the whole run, and past the closing quote if the
  // text has it (`closed`).
  std::string_view string_body(bool& closed) {
    const size_t length = whole_string_run(text_.substr(at_), closed);
    const std::string_view body = text_.substr(at_, length);
    at_ += length + (closed ? 1 : 0);
    return body;
  }

  // The object that starts here ('{'), up to its matching '}', or nullopt when the text ends
  // first.
  std::optional<std::string_view> object() {
    skip_space();
    const size_t start = at_;
    int depth = 0;
    bool in_string = false;
    for (size_t i = at_; i < text_.size(); ++i) {
      const char c = text_[i];
      if (in_string) {
        if (c == '\\') {
          ++i;  // the escaped character cannot end the string
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        at_ = i + 1;
        return text_.substr(start, at_ - start);
      }
    }
    return std::nullopt;
  }

 private:
  std::string_view text_;
  size_t at_ = 0;
};

}  // namespace

size_t whole_string_run(std::string_view body, bool& closed) {
  closed = false;
  size_t at = 0;
  while (at < body.size()) {
    const char c = body[at];
    if (c == '"') {
      closed = true;
      return at;
    }
    if (c == '\\') {
      const size_t length = at + 1 < body.size() && body[at + 1] == 'u' ? 6 : 2;
      if (at + length > body.size()) return at;  // cut inside the escape: it waits
      at += length;
      continue;
    }
    ++at;
  }
  return at;
}

std::string unescape_string_run(std::string_view run) {
  std::string quoted;
  quoted.reserve(run.size() + 2);
  quoted += '"';
  quoted += run;
  quoted += '"';
  const nlohmann::json value = nlohmann::json::parse(quoted, nullptr, false);
  return value.is_string() ? value.get<std::string>() : std::string();
}

GenericReplyPrefix read_generic_reply_prefix(std::string_view text, bool opening_only) {
  GenericReplyPrefix out;
  Cursor cursor(text);
  bool closed = false;
  if (!cursor.eat('{') || !cursor.eat('"')) return out;
  const std::string_view key = cursor.string_body(closed);
  if (!closed || !cursor.eat(':')) return out;
  if (key == "content") {
    if (!cursor.eat('"')) return out;  // the string has not opened yet
    out.kind = GenericReplyPrefix::Kind::Content;
    out.content_start = cursor.at();
    if (!opening_only) out.content = unescape_string_run(cursor.string_body(closed));
    return out;
  }
  if (key != "tool_calls") return out;
  out.kind = GenericReplyPrefix::Kind::Calls;
  if (opening_only || !cursor.eat('[')) return out;
  while (cursor.peek('{')) {
    const std::optional<std::string_view> call = cursor.object();
    if (!call) break;
    nlohmann::ordered_json object = nlohmann::ordered_json::parse(*call, nullptr, false);
    if (!object.is_discarded()) out.calls.push_back(std::move(object));
    if (!cursor.eat(',')) break;
  }
  return out;
}

}  // namespace lumen::server
