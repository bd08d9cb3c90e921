// The interpreter against jinja2: every case in jinja_cases.inc was rendered by Python's jinja2
// in Hugging Face's configuration (gen_jinja_cases.py); Lumen must produce the same bytes.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "util/error.h"

namespace lumen::chat {
namespace {

#include "jinja_cases.inc"

struct Case {
  const char* template_text;
  const char* context;
  const char* expected;
};

std::string render_case(const Case& c) {
  ChatTemplateOptions options;
  options.extra_context = nlohmann::ordered_json::parse(c.context);
  return render_chat(c.template_text, nlohmann::ordered_json::array(), options);
}

void check_all(std::initializer_list<Case> cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.template_text);
    try {
      EXPECT_EQ(render_case(c), c.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << "render failed: " << e.what();
    }
  }
}

TEST(ChatJinjaReference, Expressions) { check_all({LUMEN_JINJA_CASES_EXPRESSIONS}); }
TEST(ChatJinjaReference, Filters) { check_all({LUMEN_JINJA_CASES_FILTERS}); }
TEST(ChatJinjaReference, Tests) { check_all({LUMEN_JINJA_CASES_TESTS}); }
TEST(ChatJinjaReference, StringMethods) { check_all({LUMEN_JINJA_CASES_STRINGMETHODS}); }
TEST(ChatJinjaReference, Statements) { check_all({LUMEN_JINJA_CASES_STATEMENTS}); }
TEST(ChatJinjaReference, WhitespaceControl) { check_all({LUMEN_JINJA_CASES_WHITESPACE}); }

}  // namespace
}  // namespace lumen::chat
