#include "server/structured_request.h"

#include <utility>
#include <vector>

#include "server/api_error.h"

namespace lumen::server {

namespace {

// Bounds on what a client sends (the grammar compiler has its own limits on what the text
// expands to): 1 MB of schema or grammar text, 1024 choices of up to 4 KB.
constexpr size_t kMaxConstraintBytes = 1u << 20;
constexpr size_t kMaxChoices = 1024;
constexpr size_t kMaxChoiceBytes = 4096;

std::string checked_text(const std::string& field, std::string text) {
  if (text.size() > kMaxConstraintBytes) {
    invalid(field, "'{}' is {} bytes; at most {} are accepted", field, text.size(), kMaxConstraintBytes);
  }
  return text;
}

// A schema given as a JSON object (OpenAI, llama-server) or as its text (vLLM accepts both).
std::string schema_text(const std::string& field, const nlohmann::json& value) {
  if (value.is_string()) return checked_text(field, value.get<std::string>());
  if (!value.is_object() && !value.is_boolean()) invalid(field, "'{}' must be a JSON schema (an object)", field);
  return checked_text(field, value.dump());
}

std::string string_field(const std::string& field, const nlohmann::json& value) {
  if (!value.is_string()) invalid(field, "'{}' must be a string", field);
  return checked_text(field, value.get<std::string>());
}

std::vector<std::string> choices(const std::string& field, const nlohmann::json& value) {
  if (!value.is_array() || value.empty()) invalid(field, "'{}' must be a non-empty list of strings", field);
  if (value.size() > kMaxChoices) invalid(field, "'{}' may list at most {} strings", field, kMaxChoices);
  std::vector<std::string> out;
  for (const auto& item : value) {
    if (!item.is_string()) invalid(field, "'{}' must be a non-empty list of strings", field);
    if (item.get_ref<const std::string&>().size() > kMaxChoiceBytes) {
      invalid(field, "each of '{}' may be at most {} bytes", field, kMaxChoiceBytes);
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

class Collector {
 public:
  // Each field that sets a constraint calls this first: the second one is an error.
  StructuredOutputs& take(const std::string& field) {
    if (result_) {
      invalid(field, "'{}' and '{}' both constrain the output; send one", result_->field, field);
    }
    result_.emplace();
    result_->field = field;
    return result_->constraint;
  }
  StructuredOutputs* current() { return result_ ? &result_->constraint : nullptr; }
  std::optional<StructuredRequest> result() && { return std::move(result_); }

 private:
  std::optional<StructuredRequest> result_;
};

void read_response_format(const nlohmann::json& format, Collector& out) {
  const std::string field = "response_format";
  if (!format.is_object()) invalid(field, "'response_format' must be an object with a 'type'");
  const RequestFields f(format);
  const auto type = f.string("type");
  if (!type) invalid(field, "'response_format' needs a 'type': text, json_object or json_schema");
  if (*type == "text") return;
  if (*type == "json_object") {
    // llama-server lets json_object carry a schema.
    if (const nlohmann::json* schema = f.find("schema")) {
      out.take(field).json = schema_text(field, *schema);
    } else {
      out.take(field).json_object = true;
    }
    return;
  }
  if (*type == "json_schema") {
    const nlohmann::json* spec = f.find("json_schema");
    if (spec == nullptr || !spec->is_object()) {
      invalid(field, "'response_format' of type json_schema needs a 'json_schema' object with a 'schema'");
    }
    const nlohmann::json* schema = RequestFields(*spec).find("schema");
    // OpenAI makes the schema optional (any JSON object then).
    if (schema == nullptr) {
      out.take(field).json_object = true;
    } else {
      out.take(field).json = schema_text(field, *schema);
    }
    return;
  }
  invalid(field, "'response_format' type '{}' is not one of text, json_object, json_schema", *type);
}

void read_vllm_structured_outputs(const nlohmann::json& spec, Collector& out) {
  const std::string field = "structured_outputs";
  if (!spec.is_object()) invalid(field, "'structured_outputs' must be an object");
  const RequestFields f(spec);
  if (const nlohmann::json* v = f.find("json")) out.take(field + ".json").json = schema_text(field + ".json", *v);
  if (auto v = f.boolean("json_object"); v && *v) out.take(field + ".json_object").json_object = true;
  if (const nlohmann::json* v = f.find("regex")) out.take(field + ".regex").regex = string_field(field + ".regex", *v);
  if (const nlohmann::json* v = f.find("choice")) out.take(field + ".choice").choice = choices(field + ".choice", *v);
  if (const nlohmann::json* v = f.find("grammar")) {
    out.take(field + ".grammar").grammar = string_field(field + ".grammar", *v);
  }
}

// vLLM's structured_outputs.disable_any_whitespace, for whichever field set the constraint
// (response_format included): false allows whitespace between JSON tokens, true (Lumen's
// default) none. It only matters to JSON; with the other constraints it changes nothing, as
// in vLLM.
void read_whitespace_choice(const RequestFields& fields, Collector& out) {
  const nlohmann::json* spec = fields.find("structured_outputs");
  if (spec == nullptr || !spec->is_object()) return;
  const nlohmann::json* flag = RequestFields(*spec).find("disable_any_whitespace");
  if (flag == nullptr) return;
  if (!flag->is_boolean())
    invalid("structured_outputs.disable_any_whitespace",
            "'structured_outputs.disable_any_whitespace' must be a boolean");
  if (out.current() != nullptr) out.current()->compact_whitespace = flag->get<bool>();
}

}  // namespace

std::optional<StructuredRequest> parse_structured_request(const RequestFields& fields) {
  Collector out;
  if (const nlohmann::json* v = fields.find("response_format")) read_response_format(*v, out);
  if (const nlohmann::json* v = fields.find("structured_outputs")) read_vllm_structured_outputs(*v, out);
  if (const nlohmann::json* v = fields.find("guided_json")) out.take("guided_json").json = schema_text("guided_json", *v);
  if (const nlohmann::json* v = fields.find("guided_regex")) {
    out.take("guided_regex").regex = string_field("guided_regex", *v);
  }
  if (const nlohmann::json* v = fields.find("guided_choice")) {
    out.take("guided_choice").choice = choices("guided_choice", *v);
  }
  if (const nlohmann::json* v = fields.find("guided_grammar")) {
    out.take("guided_grammar").grammar = string_field("guided_grammar", *v);
  }
  if (const nlohmann::json* v = fields.find("grammar")) out.take("grammar").grammar = string_field("grammar", *v);
  if (const nlohmann::json* v = fields.find("json_schema")) out.take("json_schema").json = schema_text("json_schema", *v);
  read_whitespace_choice(fields, out);
  return std::move(out).result();
}

void restore_schema_order(const nlohmann::ordered_json& body, const std::string& field, StructuredOutputs& constraint) {
  if (!constraint.json) return;
  const nlohmann::ordered_json* schema = nullptr;
  auto member = [](const nlohmann::ordered_json* object, const char* key) -> const nlohmann::ordered_json* {
    if (object == nullptr || !object->is_object()) return nullptr;
    auto it = object->find(key);
    return it == object->end() ? nullptr : &*it;
  };
  if (field == "response_format") {
    const auto* format = member(&body, "response_format");
    schema = member(member(format, "json_schema"), "schema");
    if (schema == nullptr) schema = member(format, "schema");
  } else if (field == "structured_outputs.json") {
    schema = member(member(&body, "structured_outputs"), "json");
  } else if (field == "guided_json" || field == "json_schema") {
    schema = member(&body, field.c_str());
  }
  if (schema != nullptr && (schema->is_object() || schema->is_boolean())) constraint.json = schema->dump();
}

}  // namespace lumen::server
