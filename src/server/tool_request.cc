#include "server/tool_request.h"

#include <set>

#include "server/api_error.h"

namespace lumen::server {

namespace {

// Bounds a client cannot exceed (the rendered prompt has its own limit too).
constexpr size_t kMaxTools = 128;
constexpr size_t kMaxToolNameBytes = 64;

bool valid_name(const std::string& name) {
  // OpenAI's rule: a-z, A-Z, 0-9, underscores and dashes, at most 64.
  if (name.empty() || name.size() > kMaxToolNameBytes) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

ToolFunction read_tool(const nlohmann::json& tool) {
  const char* shape = R"(each tool must be {"type": "function", "function": {"name", "description", "parameters"}})";
  if (!tool.is_object() || tool.value("type", nlohmann::json()) != "function") invalid("tools", "{}", shape);
  auto fn = tool.find("function");
  if (fn == tool.end() || !fn->is_object()) invalid("tools", "{}", shape);
  const RequestFields f(*fn);
  ToolFunction out;
  const auto name = f.string("name");
  if (!name || !valid_name(*name)) {
    invalid("tools", "a tool's name must be 1 to {} letters, digits, underscores or dashes", kMaxToolNameBytes);
  }
  out.name = *name;
  out.description = f.string("description").value_or("");
  if (const nlohmann::json* parameters = f.find("parameters")) {
    if (!parameters->is_object()) invalid("tools", "the parameters of tool '{}' must be a JSON Schema object", out.name);
    out.parameters = nlohmann::ordered_json(*parameters);
  } else {
    out.parameters = nlohmann::ordered_json::object();
  }
  return out;
}

}  // namespace

std::vector<const ToolFunction*> ToolRequest::callable() const {
  std::vector<const ToolFunction*> out;
  for (const ToolFunction& f : functions) {
    if (choice != ToolChoice::Named || f.name == named) out.push_back(&f);
  }
  return out;
}

std::optional<ToolRequest> parse_tool_request(const RequestFields& fields) {
  for (const char* legacy : {"functions", "function_call"}) {
    if (fields.has(legacy)) invalid(legacy, "'{}' is deprecated by OpenAI; send 'tools' and 'tool_choice'", legacy);
  }
  const nlohmann::json* tools = fields.find("tools");
  const nlohmann::json* choice = fields.find("tool_choice");
  if (tools == nullptr || (tools->is_array() && tools->empty())) {
    if (choice != nullptr && !(choice->is_string() && *choice == "none")) {
      invalid("tool_choice", "'tool_choice' needs 'tools'");
    }
    return std::nullopt;
  }
  if (!tools->is_array()) invalid("tools", "'tools' must be a list");
  if (tools->size() > kMaxTools) invalid("tools", "at most {} tools per request", kMaxTools);
  ToolRequest out;
  out.tools = nlohmann::ordered_json(*tools);
  std::set<std::string> names;
  for (const auto& tool : *tools) {
    out.functions.push_back(read_tool(tool));
    if (!names.insert(out.functions.back().name).second) {
      invalid("tools", "two tools are named '{}'", out.functions.back().name);
    }
  }
  if (choice != nullptr) {
    if (choice->is_string()) {
      const std::string c = choice->get<std::string>();
      if (c == "none") out.choice = ToolChoice::None;
      else if (c == "auto") out.choice = ToolChoice::Auto;
      else if (c == "required") out.choice = ToolChoice::Required;
      else invalid("tool_choice", "'tool_choice' must be none, auto, required or {{\"type\": \"function\", ...}}");
    } else if (choice->is_object()) {
      auto fn = choice->find("function");
      if (choice->value("type", nlohmann::json()) != "function" || fn == choice->end() || !fn->is_object() ||
          !fn->contains("name") || !(*fn)["name"].is_string()) {
        invalid("tool_choice", "a named tool_choice is {{\"type\": \"function\", \"function\": {{\"name\": ...}}}}");
      }
      out.choice = ToolChoice::Named;
      out.named = (*fn)["name"].get<std::string>();
      if (!names.contains(out.named)) invalid("tool_choice", "'tool_choice' names '{}', which is not in 'tools'", out.named);
    } else {
      invalid("tool_choice", "'tool_choice' must be a string or an object");
    }
  }
  if (auto v = fields.boolean("parallel_tool_calls")) out.parallel = *v;
  return out;
}

void restore_tool_order(const nlohmann::ordered_json& body, ToolRequest& request) {
  auto tools = body.find("tools");
  if (tools == body.end() || !tools->is_array() || tools->size() != request.functions.size()) return;
  request.tools = *tools;
  for (size_t i = 0; i < request.functions.size(); ++i) {
    const auto& fn = (*tools)[i]["function"];
    if (auto parameters = fn.find("parameters"); parameters != fn.end() && parameters->is_object()) {
      request.functions[i].parameters = *parameters;
    }
  }
}

}  // namespace lumen::server
