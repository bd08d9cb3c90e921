#pragma once
// Every top-level field a JSON endpoint knows, in one place (request_field_names.cc), sorted in
// three kinds: fields Lumen reads; OpenAI's fields it does not act on (user, store, audio...);
// and known vLLM / llama-server extras it does not support (include_stop_str_in_output,
// mirostat...). A field of none of these is a typo or a feature nobody implements: OpenAI
// answers it with a 400, and so does Lumen, naming it, rather than silently doing something
// else than the client asked. The fields accepted but not acted on are named in the response
// header X-Lumen-Ignored-Fields, so a client moving from vLLM or llama-server can see what
// Lumen left out.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace lumen::server {

enum class JsonEndpoint { Completions, ChatCompletions, Tokenize, Detokenize, Embeddings };

inline constexpr const char* kIgnoredFieldsHeader = "X-Lumen-Ignored-Fields";

// The fields of `body` that `endpoint` accepts but does not act on, in name order. Throws
// ApiError(400) naming the unknown ones (param: the first) when any field is unknown.
std::vector<std::string> check_field_names(const nlohmann::json& body, JsonEndpoint endpoint);

// "a, b": the header's value for check_field_names' result.
std::string ignored_fields_header(const std::vector<std::string>& ignored);

}  // namespace lumen::server
