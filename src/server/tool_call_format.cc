#include "server/tool_call_format.h"

#include <map>
#include <random>

#include "grammar/json_schema_to_gbnf.h"
#include "server/generic_reply_prefix.h"
#include "server/harmony_split.h"
#include "server/harmony_tool_calls.h"
#include "server/text_trim.h"

namespace lumen::server {

namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";

std::string new_call_id() {
  static constexpr char kAlphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::string id = "call_";
  for (int i = 0; i < 24; ++i) id += kAlphabet[rng() % (sizeof(kAlphabet) - 1)];
  return id;
}

bool must_call(const ToolRequest& request) {
  return request.choice == ToolChoice::Required || request.choice == ToolChoice::Named;
}

// The schema of one call: {"<name_key>": <the name>, "<arguments_key>": <its parameters>}.
ordered_json call_schema(const ToolFunction& f, const char* arguments_key) {
  ordered_json parameters = f.parameters.empty() ? ordered_json{{"type", "object"}} : f.parameters;
  return {{"type", "object"},
          {"properties", {{"name", {{"const", f.name}}}, {arguments_key, parameters}}},
          {"required", {"name", arguments_key}},
          {"additionalProperties", false}};
}

ordered_json any_call_schema(const ToolRequest& request, const char* arguments_key) {
  ordered_json any = ordered_json::array();
  for (const ToolFunction* f : request.callable()) any.push_back(call_schema(*f, arguments_key));
  return any.size() == 1 ? any[0] : ordered_json{{"anyOf", any}};
}

ordered_json generic_text_schema() {
  return {{"type", "object"},
          {"properties", {{"content", {{"type", "string"}}}}},
          {"required", {"content"}},
          {"additionalProperties", false}};
}

ordered_json generic_reply_schema(const ToolRequest& request) {
  if (request.choice == ToolChoice::None) return generic_text_schema();
  ordered_json calls = {{"type", "array"}, {"items", any_call_schema(request, "arguments")}, {"minItems", 1}};
  calls["maxItems"] = request.parallel ? kMaxParallelToolCalls : 1;
  ordered_json call_reply = {{"type", "object"},
                             {"properties", {{"tool_calls", calls}}},
                             {"required", {"tool_calls"}},
                             {"additionalProperties", false}};
  if (request.choice == ToolChoice::Required || request.choice == ToolChoice::Named) return call_reply;
  return {{"anyOf", {call_reply, generic_text_schema()}}};
}

std::string generic_instructions(const ToolRequest& request) {
  if (request.choice == ToolChoice::None) {
    // No call may be made, but the conversation holds its calls and results as JSON, which a
    // model would imitate in free text: the reply is JSON too, and Lumen unwraps its content.
    return "Reply with one JSON object: {\"content\": <your answer>}. A tool's result comes back as "
           "{\"tool_response\": ...}.";
  }
  ordered_json described = ordered_json::array();
  for (const ToolFunction* f : request.callable()) {
    described.push_back({{"name", f->name}, {"description", f->description}, {"parameters", f->parameters}});
  }
  std::string text =
      "You can call tools. Each tool has a name, a description and a JSON Schema of its arguments:\n" +
      described.dump(2) + "\n\n";
  text += must_call(request) ? "Reply with one JSON object that calls " +
                                   std::string(request.parallel ? "one or more tools" : "one tool") +
                                   ": {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": <arguments object>}]}"
                             : "Reply with one JSON object: {\"tool_calls\": [{\"name\": <tool name>, \"arguments\": "
                               "<arguments object>}]} to call " +
                                   std::string(request.parallel ? "one or more tools" : "one tool") +
                                   ", or {\"content\": <your answer>} to answer without a tool. A tool's result "
                                   "comes back as {\"tool_response\": ...}.";
  return text;
}

// Text of a message's content (string, or empty).
std::string content_text(const ordered_json& message) {
  auto it = message.find("content");
  return it != message.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// Arguments as the client sent them (a JSON text, or an object) as JSON.
ordered_json arguments_json(const ordered_json& arguments) {
  if (arguments.is_string()) {
    ordered_json parsed = ordered_json::parse(arguments.get<std::string>(), nullptr, false);
    return parsed.is_discarded() ? arguments : parsed;
  }
  return arguments;
}

// Generic: earlier calls and results as the JSON the model writes and reads, in turns any
// template accepts (tool results become user turns; neighbours of one role merge).
// `instruct`: add the reply format (and, unless tool_choice is none, the tool descriptions).
ordered_json generic_messages(const ordered_json& messages, const ToolRequest& request, bool instruct) {
  std::map<std::string, std::string> call_names;  // tool_call_id -> function name
  ordered_json rewritten = ordered_json::array();
  auto append = [&](const std::string& role, const std::string& text) {
    if (!rewritten.empty() && rewritten.back()["role"] == role) {
      rewritten.back()["content"] = rewritten.back()["content"].get<std::string>() + "\n\n" + text;
    } else {
      rewritten.push_back({{"role", role}, {"content", text}});
    }
  };
  const std::string instructions = instruct ? generic_instructions(request) : std::string();
  bool instructed = !instruct;
  for (const auto& message : messages) {
    const std::string role = message["role"].get<std::string>();
    if (role == "system" || role == "developer") {
      append("system", content_text(message) + (instructed ? "" : "\n\n" + instructions));
      instructed = true;
    } else if (role == "assistant" && message.contains("tool_calls")) {
      ordered_json calls = ordered_json::array();
      for (const auto& call : message["tool_calls"]) {
        const auto& fn = call["function"];
        calls.push_back({{"name", fn["name"]}, {"arguments", arguments_json(fn.value("arguments", ordered_json::object()))}});
        if (call.contains("id")) call_names[call["id"].get<std::string>()] = fn["name"].get<std::string>();
      }
      append("assistant", ordered_json{{"tool_calls", calls}}.dump());
    } else if (role == "assistant") {
      append("assistant", ordered_json{{"content", content_text(message)}}.dump());
    } else if (role == "tool") {
      ordered_json response = {{"content", content_text(message)}};
      if (auto id = message.find("tool_call_id"); id != message.end() && call_names.contains(id->get<std::string>())) {
        response = {{"name", call_names[id->get<std::string>()]}, {"content", content_text(message)}};
      }
      append("user", ordered_json{{"tool_response", response}}.dump());
    } else {
      append(role, content_text(message));
    }
  }
  if (!instructed) rewritten.insert(rewritten.begin(), ordered_json{{"role", "system"}, {"content", instructions}});
  return rewritten;
}

bool offered(const ToolRequest& request, const std::string& name) {
  for (const ToolFunction* f : request.callable()) {
    if (f->name == name) return true;
  }
  return false;
}

// {"name": ..., "<arguments_key>": {...}} as a call, when it is one of an offered function.
std::optional<ParsedToolCall> call_of(const ordered_json& object, const char* arguments_key,
                                      const ToolRequest& request) {
  if (!object.is_object()) return std::nullopt;
  auto name = object.find("name");
  if (name == object.end() || !name->is_string()) return std::nullopt;
  auto arguments = object.find(arguments_key);
  if (arguments == object.end()) arguments = object.find("arguments");  // either key, whatever the format
  if (arguments == object.end()) arguments = object.find("parameters");
  return make_tool_call(name->get<std::string>(), arguments == object.end() ? ordered_json::object() : *arguments,
                        request);
}

ToolReply parse_hermes(std::string_view text, const ToolRequest& request) {
  ToolReply reply;
  std::string content;
  size_t at = 0;
  while (true) {
    const size_t open = text.find(kHermesOpen, at);
    if (open == std::string_view::npos) {
      content += text.substr(at);
      break;
    }
    content += text.substr(at, open - at);
    const size_t body = open + kHermesOpen.size();
    size_t close = text.find(kHermesClose, body);
    if (close == std::string_view::npos) break;  // a call cut short (max_tokens): not content
    const size_t end = close + kHermesClose.size();
    const ordered_json object = ordered_json::parse(text.substr(body, close - body), nullptr, false);
    if (auto call = call_of(object, "arguments", request)) {
      reply.calls.push_back(std::move(*call));
    } else {
      content += text.substr(open, end - open);  // not a call we can make: the client sees the text
    }
    at = end;
  }
  reply.content = reply.calls.empty() ? content : trimmed(content);
  return reply;
}

// Llama 3's call opens with <|python_tag|> or {"name" (the parameters object follows).
bool text_starts_call(std::string_view body) {
  if (body.starts_with(kPythonTag)) return true;
  const size_t brace = body.find_first_not_of(" \t\r\n");
  if (brace == std::string_view::npos || body[brace] != '{') return false;
  const size_t quote = body.find_first_not_of(" \t\r\n", brace + 1);
  return quote == std::string_view::npos || body.substr(quote).starts_with("\"name\"") ||
         std::string_view("\"name\"").starts_with(body.substr(quote));
}

ToolReply parse_llama3(std::string_view text, const ToolRequest& request) {
  std::string body = trimmed(text);
  if (body.starts_with(kPythonTag)) body = trimmed(std::string_view(body).substr(kPythonTag.size()));
  ToolReply reply;
  // One call, or several separated by ';' (what Llama 3.x writes for parallel calls).
  std::vector<std::string> parts;
  const ordered_json whole = ordered_json::parse(body, nullptr, false);
  if (!whole.is_discarded()) {
    if (auto call = call_of(whole, "parameters", request)) reply.calls.push_back(std::move(*call));
  } else {
    size_t start = 0;
    while (start <= body.size()) {
      const size_t semi = body.find(';', start);
      const size_t end = semi == std::string::npos ? body.size() : semi;
      const ordered_json object = ordered_json::parse(body.substr(start, end - start), nullptr, false);
      auto call = call_of(object, "parameters", request);
      if (!call) {
        reply.calls.clear();
        break;
      }
      reply.calls.push_back(std::move(*call));
      if (semi == std::string::npos) break;
      start = semi + 1;
    }
  }
  if (reply.calls.empty()) {
    // A call the reply began but did not finish (cut by max_tokens) is no content; other text,
    // JSON that calls nothing offered included, is.
    const bool cut_call = (text_starts_call(body) || must_call(request)) && whole.is_discarded();
    if (!cut_call) reply.content = std::string(text);
  }
  return reply;
}

// The reply is constrained to the wrapper's JSON from its first byte, so text that does not
// parse is a reply cut short (max_tokens): its finished calls, or its content so far, and never
// the wrapper itself.
ToolReply parse_generic(std::string_view text, const ToolRequest& request) {
  ToolReply reply;
  const GenericReplyPrefix prefix = read_generic_reply_prefix(text);
  if (prefix.kind == GenericReplyPrefix::Kind::Content) {
    reply.content = prefix.content;
  } else {
    for (const auto& c : prefix.calls) {
      if (auto call = call_of(c, "arguments", request)) reply.calls.push_back(std::move(*call));
    }
  }
  return reply;
}

}  // namespace

std::optional<ParsedToolCall> make_tool_call(std::string_view name, const nlohmann::ordered_json& arguments,
                                             const ToolRequest& request) {
  if (!offered(request, std::string(name))) return std::nullopt;
  const ordered_json args = arguments_json(arguments);
  if (!args.is_object()) return std::nullopt;
  return ParsedToolCall{new_call_id(), std::string(name), args.dump()};
}

ToolCallFormat tool_call_format_of(std::string_view source) {
  if (template_is_harmony(source)) return ToolCallFormat::Harmony;
  if (source.find(kHermesOpen) != std::string_view::npos) return ToolCallFormat::Hermes;
  if (source.find(kPythonTag) != std::string_view::npos || source.find("Environment: ipython") != std::string_view::npos) {
    return ToolCallFormat::Llama3Json;
  }
  return ToolCallFormat::Generic;
}

const char* tool_call_format_name(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::Hermes: return "hermes";
    case ToolCallFormat::Llama3Json: return "llama3-json";
    case ToolCallFormat::Harmony: return "harmony";
    case ToolCallFormat::Generic: break;
  }
  return "generic";
}

ToolPrompt prepare_tool_prompt(ToolCallFormat format, const nlohmann::ordered_json& messages,
                               const ToolRequest& request, bool wrapped_reply) {
  // tool_choice none: no call may be made, but the conversation may hold earlier calls and
  // results, which the model must still see (a native template renders them itself).
  if (format == ToolCallFormat::Generic) return {generic_messages(messages, request, wrapped_reply), std::nullopt};
  if (format == ToolCallFormat::Harmony)
    return {harmony_tool_messages(messages), harmony_template_tools(request.tools)};
  return {messages, request.tools};
}

std::optional<StructuredOutputs> tool_reply_constraint(ToolCallFormat format, const ToolRequest& request) {
  StructuredOutputs out;
  if (format == ToolCallFormat::Generic) {
    out.json = generic_reply_schema(request).dump();
    return out;
  }
  if (request.choice == ToolChoice::None) return std::nullopt;
  switch (format) {
    case ToolCallFormat::Generic: break;
    case ToolCallFormat::Harmony: return harmony_call_constraint(request);
    case ToolCallFormat::Llama3Json:
      if (!must_call(request)) return std::nullopt;
      out.json = any_call_schema(request, "parameters").dump();
      return out;
    case ToolCallFormat::Hermes: {
      if (!must_call(request)) return std::nullopt;
      grammar::JsonSchemaOptions options;
      options.root_rule = "tool-call";
      const std::string call = grammar::json_schema_to_gbnf(any_call_schema(request, "arguments"), options);
      const std::string one = "\"<tool_call>\\n\" tool-call \"\\n</tool_call>\"";
      const std::string more = " (\"\\n\" " + one + "){0," + std::to_string(kMaxParallelToolCalls - 1) + "}";
      out.grammar = "root ::= " + one + (request.parallel ? more : std::string()) + "\n" + call;
      return out;
    }
  }
  return std::nullopt;
}

ToolReply parse_tool_reply(ToolCallFormat format, std::string_view text, const ToolRequest& request) {
  if (format == ToolCallFormat::Generic) return parse_generic(text, request);
  if (request.choice == ToolChoice::None) return {std::string(text), {}};
  switch (format) {
    case ToolCallFormat::Hermes: return parse_hermes(text, request);
    case ToolCallFormat::Llama3Json: return parse_llama3(text, request);
    case ToolCallFormat::Harmony: return parse_harmony_reply(text, request);
    case ToolCallFormat::Generic: break;
  }
  return parse_generic(text, request);
}

size_t tool_call_start(ToolCallFormat format, std::string_view text) {
  switch (format) {
    case ToolCallFormat::Generic: return 0;
    case ToolCallFormat::Harmony: return harmony_call_start(text);
    case ToolCallFormat::Llama3Json: {
      // The reply is a call only if it starts as one.
      const size_t first = text.find_first_not_of(" \t\r\n");
      if (first == std::string_view::npos) return text.empty() ? std::string_view::npos : 0;
      return text[first] == '{' || text.substr(first).starts_with("<") ? 0 : std::string_view::npos;
    }
    case ToolCallFormat::Hermes: {
      const size_t open = text.find(kHermesOpen);
      if (open != std::string_view::npos) return open;
      // A tail that could still grow into the marker.
      for (size_t k = std::min(text.size(), kHermesOpen.size() - 1); k > 0; --k) {
        if (kHermesOpen.starts_with(text.substr(text.size() - k))) return text.size() - k;
      }
      return std::string_view::npos;
    }
  }
  return std::string_view::npos;
}

}  // namespace lumen::server
