#pragma once
// JSON Schema -> GBNF: the subset llama.cpp, XGrammar and llguidance support in practice.
//
// Objects list their properties in the schema's declared order (optional ones may be left
// out), so the schema should be parsed keeping key order: use the ordered_json or text
// overloads. A plain nlohmann::json has its keys sorted, and that order is used then.
#include <cstddef>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace lumen::grammar {

struct JsonSchemaOptions {
  // Whitespace between tokens: true (the default) = none, `{"a":1,"b":[2,3]}`, as OpenAI's
  // structured outputs and vLLM's disable_any_whitespace write it; false = a bounded amount
  // after brackets, keys, colons, members and commas (one space, or one or two newlines and up
  // to 20 spaces or tabs: llama.cpp's converter's looser form). Either way nothing follows the
  // root value: once it closes, only the end of generation may come.
  bool compact_whitespace = true;
  // Largest count a repetition may spell out (maxLength, maxItems, regex {m,n}): larger upper
  // bounds are lowered to it (every output still validates), larger lower bounds are refused.
  size_t max_repetition = 4096;
  // The start rule's name: another grammar may embed this one by referring to it (tool calls
  // wrap a schema's JSON in their markers). Other rule names must not collide with the
  // embedding grammar's: the embedder uses names that do not occur here.
  std::string root_rule = "root";
  // Starts every rule's name, the start rule's too (its name is rule_prefix + root_rule): a
  // grammar embedding several converted schemas gives each its own ([a-zA-Z0-9-]).
  std::string rule_prefix;
};

// Throws GrammarError (offset 0; the message names the JSON pointer of the offending part).
std::string json_schema_to_gbnf(const nlohmann::ordered_json& schema, const JsonSchemaOptions& options = {});
std::string json_schema_to_gbnf(const nlohmann::json& schema, const JsonSchemaOptions& options = {});
// Parses `schema_text` keeping key order; a JSON syntax error is a GrammarError at its offset.
std::string json_schema_text_to_gbnf(std::string_view schema_text, const JsonSchemaOptions& options = {});

// Any JSON object (response_format {"type": "json_object"}).
std::string json_object_gbnf(const JsonSchemaOptions& options = {});

}  // namespace lumen::grammar
