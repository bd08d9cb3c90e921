#pragma once
// JSON Schema -> GBNF: the subset llama.cpp, XGrammar and llguidance support in practice.
#include <string>

#include <nlohmann/json.hpp>

namespace lumen::grammar {

struct JsonSchemaOptions {
  // Whitespace between tokens: false = any JSON whitespace (bounded), true = none (compact).
  bool compact_whitespace = false;
};

// Throws GrammarError (offset 0; the message names the JSON pointer of the offending part).
std::string json_schema_to_gbnf(const nlohmann::json& schema, const JsonSchemaOptions& options = {});

// Any JSON value (response_format {"type": "json_object"}: an object).
std::string json_object_gbnf();

}  // namespace lumen::grammar
