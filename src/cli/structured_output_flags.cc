#include "cli/structured_output_flags.h"

#include "cli/text_file.h"

namespace lumen::cli {

namespace {

StructuredOutputs& constraint(SamplingParams& params) {
  if (!params.structured_outputs) params.structured_outputs.emplace();
  return *params.structured_outputs;
}

}  // namespace

void add_structured_output_flags(CLI::App* cmd, SamplingParams& params) {
  auto* group = cmd->add_option_group("Structured output", "Constrain the output (one of these)");
  group->add_option_function<std::string>(
      "--grammar", [&params](const std::string& text) { constraint(params).grammar = text; },
      "GBNF grammar (llama.cpp's notation) the output must follow");
  group->add_option_function<std::string>(
      "--grammar-file",
      [&params](const std::string& path) { constraint(params).grammar = read_text_file(path, "grammar file"); },
      "File holding a GBNF grammar");
  group->add_option_function<std::string>(
      "--json-schema", [&params](const std::string& text) { constraint(params).json = text; },
      "JSON Schema the output must validate against (e.g. '{\"type\": \"object\"}')");
  group->add_option_function<std::string>(
      "--json-schema-file",
      [&params](const std::string& path) { constraint(params).json = read_text_file(path, "JSON schema file"); },
      "File holding a JSON Schema");
  group->add_flag_function(
      "--json-object", [&params](int64_t) { constraint(params).json_object = true; },
      "The output is a JSON object");
  // Outside the group's "one of these": it qualifies --json-schema / --json-object.
  cmd->add_flag_function(
      "--json-any-whitespace", [&params](int64_t) { constraint(params).compact_whitespace = false; },
      "JSON output may put whitespace between tokens (default: compact, none; either way it ends where the "
      "root value closes)");
  group->add_option_function<std::string>(
      "--regex", [&params](const std::string& pattern) { constraint(params).regex = pattern; },
      "Regular expression the whole output matches");
  group->add_option_function<std::vector<std::string>>(
         "--choice",
         [&params](const std::vector<std::string>& options) {
           auto& choice = constraint(params).choice;
           if (!choice) choice.emplace();
           choice->insert(choice->end(), options.begin(), options.end());
         },
         "The output is exactly one of these strings; repeatable")
      ->allow_extra_args(false);
}

}  // namespace lumen::cli
