#include "server/generic_reply_prefix.h"

#include <optional>

namespace lumen::server {

namespace {

class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

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

  // The body of a string whose opening quote was eaten, up to the end of the text or its
  // closing quote (eaten), without an escape that the text cuts. `closed` says which.
  std::string_view string_body(bool& closed) {
    const size_t start = at_;
    closed = false;
    while (at_ < text_.size()) {
      const char c = text_[at_];
      if (c == '"') {
        closed = true;
        ++at_;
        return text_.substr(start, at_ - 1 - start);
      }
      if (c == '\\') {
        const size_t length = at_ + 1 < text_.size() && text_[at_ + 1] == 'u' ? 6 : 2;
        if (at_ + length > text_.size()) break;  // cut inside the escape
        at_ += length;
        continue;
      }
      ++at_;
    }
    return text_.substr(start, at_ - start);
  }

  // The object that starts here ('{'), up to its matching '}', or nullopt when the text ends first.
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

// The text of a JSON string body (escapes resolved); empty if it is not one.
std::string unescaped(std::string_view body) {
  const nlohmann::json value = nlohmann::json::parse("\"" + std::string(body) + "\"", nullptr, false);
  return value.is_string() ? value.get<std::string>() : std::string();
}

}  // namespace

GenericReplyPrefix read_generic_reply_prefix(std::string_view text) {
  GenericReplyPrefix out;
  Cursor cursor(text);
  bool closed = false;
  if (!cursor.eat('{') || !cursor.eat('"')) return out;
  const std::string key = unescaped(cursor.string_body(closed));
  if (!closed || !cursor.eat(':')) return out;
  if (key == "content") {
    out.kind = GenericReplyPrefix::Kind::Content;
    if (cursor.eat('"')) out.content = unescaped(cursor.string_body(closed));
    return out;
  }
  if (key != "tool_calls") return out;
  out.kind = GenericReplyPrefix::Kind::Calls;
  if (!cursor.eat('[')) return out;
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
