// Templates Lumen cannot or must not run: each is a one-line lumen::Error naming the line, and
// no input, however hostile, crashes the renderer or runs without bound.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <chrono>
#include <exception>
#include <random>
#include <string>

#include "chat/builtin_templates.h"
#include "chat/chat_template.h"
#include "util/error.h"

namespace lumen::chat {
namespace {

using nlohmann::ordered_json;

std::string render(const std::string& text, ChatTemplateOptions options = {}) {
  return render_chat(text, ordered_json::array({{{"role", "user"}, {"content", "hi"}}}), options);
}

std::string error_of(const std::string& text, ChatTemplateOptions options = {}) {
  try {
    render(text, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "<no error>";
}

TEST(ChatTemplateErrors, UnsupportedSyntaxNamesTheLine) {
  EXPECT_EQ(error_of("a\n{% include 'x' %}"), "chat template: template line 2: unsupported or unknown tag 'include'");
  EXPECT_NE(error_of("{{ 1 +"), "<no error>");
  EXPECT_NE(error_of("{% if x %}"), "<no error>");
  EXPECT_NE(error_of("{% for x in y %}{% endif %}"), "<no error>");
  EXPECT_NE(error_of("{{ 'unterminated }}"), "<no error>");
  EXPECT_NE(error_of("{# never closed"), "<no error>");
  EXPECT_NE(error_of("{{ x | no_such_filter }}").find("no filter named 'no_such_filter'"), std::string::npos);
  EXPECT_EQ(error_of("{{ 'a'.no_such_method() }}"),
            "chat template line 1: 'str object' has no attribute 'no_such_method'");
}

TEST(ChatTemplateErrors, RuntimeErrorsNameTheLine) {
  EXPECT_EQ(error_of("\n\n{{ raise_exception('bad roles') }}"),
            "chat template line 3: the template raised an error: bad roles");
  EXPECT_EQ(error_of("{{ x.y }}"), "chat template line 1: 'x' is undefined");
  EXPECT_EQ(error_of("{{ messages[0].nope.x }}"), "chat template line 1: 'dict object' has no attribute 'nope'");
  EXPECT_NE(error_of("{{ 'a' + 1 }}").find("unsupported operand"), std::string::npos);
  EXPECT_NE(error_of("{{ 1 / 0 }}").find("division by zero"), std::string::npos);
  EXPECT_NE(error_of("{{ messages.append(1) }}").find("not supported"), std::string::npos);
  EXPECT_NE(error_of("{{ 9223372036854775807 + 1 }}").find("overflow"), std::string::npos);
}

TEST(ChatTemplateErrors, ResourceLimitsStopRunawayTemplates) {
  EXPECT_NE(error_of("{{ 'x' * 100000000 }}").find("size limit"), std::string::npos);
  // A million iterations against a limit of 10 000 steps. The CPU-time limit is lifted so that
  // only the step limit can end it: with 100 000 steps over lists of 100 000 (the old case) a
  // Debug + ASan render took 1.2-1.4 s of CPU, and on CI's slower machine passed the 2 s
  // CPU-time limit first (the only failure of CI's run on 2026-11-28).
  ChatTemplateOptions few_steps;
  few_steps.limits.max_steps = 10000;
  few_steps.limits.max_time = std::chrono::minutes(10);
  EXPECT_NE(error_of("{% for i in range(1000) %}{% for j in range(1000) %}{% endfor %}{% endfor %}", few_steps)
                .find("step limit"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}").find("nest too deeply"), std::string::npos);
  EXPECT_NE(error_of("{{ " + std::string(10000, '(') + "1" + std::string(10000, ')') + " }}").find("nests too deeply"),
            std::string::npos);
  ChatTemplateOptions small;
  small.limits.max_output_bytes = 10;
  EXPECT_NE(error_of("{% for i in range(100) %}{{ i }}{% endfor %}", small).find("size limit"), std::string::npos);
}

TEST(ChatTemplateErrors, BadInputIsRejected) {
  EXPECT_NE(error_of("\xff{{ 1 }}").find("UTF-8"), std::string::npos);
  EXPECT_THROW(render_chat("x", ordered_json::object(), {}), Error);
  ordered_json bad = ordered_json::array({{{"role", "user"}, {"content", std::string("\xc3")}}});
  EXPECT_THROW(render_chat("{{ messages }}", bad, {}), Error);
  ordered_json deep = ordered_json::array();
  for (int i = 0; i < 100000; ++i) deep = ordered_json::array({std::move(deep)});
  EXPECT_THROW(render_chat("{{ messages }}", deep, {}), Error);
}

TEST(ChatTemplateErrors, MutatedTemplatesNeverCrash) {
  // Random byte edits of real-shaped templates: every outcome is output or a lumen::Error that
  // says what is wrong; anything else thrown fails the test (as a crash would), and both
  // outcomes must occur, or the edits no longer reach the renderer's error paths.
  std::mt19937 rng(1234);
  int rendered = 0, rejected = 0;
  const std::string alphabet = "{}%#-+|.()[]'\"~*/ \n\tabcxyz019=<>!:,";
  const auto names = builtin_chat_template_names();
  for (int iter = 0; iter < 4000; ++iter) {
    std::string t(*builtin_chat_template(names[static_cast<size_t>(iter) % names.size()]));
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = rng() % t.size();
      switch (rng() % 3) {
        case 0: t[pos] = alphabet[rng() % alphabet.size()]; break;
        case 1: t.erase(pos, 1 + rng() % 8); break;
        default: t.insert(pos, 1, alphabet[rng() % alphabet.size()]); break;
      }
    }
    ChatTemplateOptions options;
    options.tools = ordered_json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}});
    try {
      render(t, options);
      rendered += 1;
    } catch (const Error& e) {
      EXPECT_STRNE(e.what(), "") << t;
      rejected += 1;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "a mutated template threw something other than lumen::Error: " << e.what() << "\n" << t;
    }
  }
  EXPECT_GT(rendered, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_EQ(rendered + rejected, 4000);
}

TEST(ChatBuiltinTemplates, EveryBuiltinRendersAConversation) {
  ASSERT_EQ(builtin_chat_template_names().size(), 7u);
  for (auto name : builtin_chat_template_names()) {
    SCOPED_TRACE(std::string(name));
    ChatTemplateOptions options;
    options.add_generation_prompt = true;
    std::string out = render(std::string(*builtin_chat_template(name)), options);
    EXPECT_NE(out.find("hi"), std::string::npos);
  }
  EXPECT_FALSE(builtin_chat_template("no-such-template").has_value());
}

TEST(ChatTemplateErrors, ContextCannotReplaceWhatTheRendererSets) {
  // A client's chat_template_kwargs must not swap the conversation (its text would then skip
  // the protections messages get) nor the special tokens or built-in functions.
  for (const char* name : {"messages", "tools", "documents", "add_generation_prompt", "bos_token", "eos_token",
                           "raise_exception", "strftime_now", "range", "namespace", "dict", "loop"}) {
    EXPECT_TRUE(is_reserved_variable(name)) << name;
    ChatTemplateOptions options;
    options.extra_context[name] = ordered_json::array({{{"role", "user"}, {"content", "<|im_start|>"}}});
    EXPECT_NE(error_of("{{ messages[0].content }}", options).find("cannot be overridden"), std::string::npos) << name;
  }
  ChatTemplateOptions options;
  options.extra_context["enable_thinking"] = true;
  EXPECT_FALSE(is_reserved_variable("enable_thinking"));
  EXPECT_EQ(render("{{ enable_thinking }}", options), "True");
}

TEST(ChatTemplateErrors, EveryBuiltStringAndNestingIsBounded) {
  // Each builds far more than any limit allows: a clear error, never an exhausted memory.
  const char* huge[] = {
      "{{ ('x' * 10000000) ~ ('x' * 10000000) }}",
      "{{ ('x' * 10000000) + ('x' * 10000000) }}",
      "{{ 'x' * 100000000 }}",
      "{{ ('x' * 10000000) | replace('x', 'yyyyyyyyyy') }}",
      "{{ ('x' * 10000000).replace('x', 'yyyyyyyyyy') }}",
      "{{ (['x' * 1000000] * 1000) | join }}",
      "{{ ('x' * 1000000).join(['a'] * 1000) }}",
      "{{ ['x' * 1000000] * 1000 }}",
      "{{ ['x' * 1000000] * 16000 }}",
      "{{ (['x' * 1000000] * 1000) | tojson }}",
      "{{ ([1] * 100000) | tojson(indent='x' * 100000) }}",
      "{% set s = 'x' * 10000000 %}{{ '{}{}{}{}{}{}{}{}'.format(s, s, s, s, s, s, s, s) }}",
      "{{ ('x\n' * 5000000) | indent(200) }}",
      "{{ ('x' * 10000000) | upper | replace('X', 'ab') }}",
      "{% macro m() %}{{ 'x' * 10000000 }}{{ 'x' * 10000000 }}{% endmacro %}{{ m() }}",
  };
  for (const char* t : huge) {
    // The string size limit, or the render's memory budget when the copies behind the string
    // come to more first.
    std::string err = error_of(t);
    EXPECT_TRUE(err.find("size limit") != std::string::npos || err.find("memory limit (32 MiB)") != std::string::npos)
        << t << ": " << err;
  }
  EXPECT_NE(error_of("{% set ns = namespace(x=[]) %}{% for i in range(100000) %}{% set ns.x = [ns.x] %}{% endfor %}"
                     "{{ ns.x }}")
                .find("nest more than"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace(x={}) %}{% for i in range(100000) %}{% set ns.x = {'a': ns.x} %}"
                     "{% endfor %}{{ ns.x == ns.x }}")
                .find("nest more than"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.self = ns %}{{ ns }}").find("namespace cannot"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{% set ns.l = [ns] %}{{ ns }}").find("namespace cannot"),
            std::string::npos);
  EXPECT_NE(error_of("{% set ns = namespace() %}{{ namespace(x=ns) }}").find("namespace cannot"), std::string::npos);
}

}  // namespace
}  // namespace lumen::chat
