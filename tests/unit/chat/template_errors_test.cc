// Whose fault a failed rendering is (template_errors.h): refusals and limits are the request's,
// other failures the template's; and variables the renderer sets cannot be replaced.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "chat/chat_template.h"
#include "chat/template_errors.h"

namespace lumen::chat {
namespace {

using nlohmann::ordered_json;

void render(const std::string& text, ChatTemplateOptions options = {}) {
  render_chat(text, ordered_json::array({{{"role", "user"}, {"content", "hi"}}}), options);
}

TEST(TemplateErrors, RaiseExceptionIsARefusal) {
  EXPECT_THROW(render("{{ raise_exception('roles must alternate') }}"), TemplateRefusal);
}

TEST(TemplateErrors, LimitsAreLimitErrors) {
  ChatTemplateOptions options;
  options.limits.max_steps = 1000;
  EXPECT_THROW(render("{% for i in range(100000) %}{{ i }}{% endfor %}", options), TemplateLimitError);
  options = {};
  options.limits.max_output_bytes = 100;
  EXPECT_THROW(render("{{ 'x' * 1000 }}", options), TemplateLimitError);
}

TEST(TemplateErrors, OtherFailuresAreNeither) {
  try {
    render("{{ 'a' + messages[0]['missing'] + 1 }}");
    FAIL() << "rendered";
  } catch (const TemplateRefusal&) {
    FAIL() << "a type error is not a refusal";
  } catch (const TemplateLimitError&) {
    FAIL() << "a type error is not a limit";
  } catch (const Error&) {
  }
}

TEST(TemplateErrors, ReservedNamesCannotBeReplaced) {
  for (const char* name : {"messages", "tools", "bos_token", "eos_token", "add_generation_prompt", "documents",
                           "raise_exception", "strftime_now", "range", "namespace", "dict"}) {
    EXPECT_TRUE(is_reserved_template_name(name)) << name;
    ChatTemplateOptions options;
    options.extra_context = {{name, "x"}};
    EXPECT_THROW(render("{{ messages[0]['content'] }}", options), Error) << name;
  }
  EXPECT_FALSE(is_reserved_template_name("enable_thinking"));
  ChatTemplateOptions options;
  options.extra_context = {{"enable_thinking", true}};
  EXPECT_NO_THROW(render("{{ enable_thinking }}", options));
}

}  // namespace
}  // namespace lumen::chat
