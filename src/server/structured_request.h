#pragma once
// The request fields that constrain the output, in every dialect clients send them:
//  - OpenAI: `response_format` {"type": "text" | "json_object" | "json_schema", "json_schema":
//    {"name", "schema", "strict"}} (llama-server's {"type": "json_object", "schema": {...}} too);
//  - vLLM: `structured_outputs` {json, regex, choice, grammar, json_object,
//    disable_any_whitespace}, and its older `guided_json`, `guided_regex`, `guided_choice`,
//    `guided_grammar`. JSON is compact unless `structured_outputs.disable_any_whitespace` is
//    false (with any of the fields, response_format too);
//  - llama-server: `grammar` (GBNF text) and `json_schema` (a schema).
// At most one constraint per request: two are a 400 naming both fields. Whether a schema or
// grammar is valid is decided when the engine compiles it (a 400 naming `field`).
#include <optional>
#include <string>

#include "lumen/sampling_params.h"
#include "server/request_fields.h"

namespace lumen::server {

struct StructuredRequest {
  StructuredOutputs constraint;
  std::string field;  // the request field it came from (the `param` of a 400 about it)
};

// nullopt when the request sets no constraint (or response_format {"type": "text"}). Throws
// ApiError(400) for a malformed field.
std::optional<StructuredRequest> parse_structured_request(const RequestFields& fields);

// A JSON Schema's property order is the order its objects are written in, but the body was
// parsed into a nlohmann::json, which sorts keys. This re-reads the schema behind
// `constraint` (from `field`, as parse_structured_request named it) out of the raw body in the
// client's order. Nothing changes for a schema sent as text, or for other constraints.
void restore_schema_order(const nlohmann::ordered_json& body, const std::string& field, StructuredOutputs& constraint);

}  // namespace lumen::server
