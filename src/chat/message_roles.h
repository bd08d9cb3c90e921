#pragma once
// The roles a chat message may have: OpenAI's system, developer, user, assistant and tool. One
// check for every way a conversation comes in (the server's chat requests and /tokenize, the
// Python package's LLM.chat), so a message the server refuses is refused in Python too, with the
// same words, instead of being rendered by the template under a role it never expected.
#include <nlohmann/json.hpp>
#include <string>

namespace lumen::chat {

// What is wrong with the role of message `index` (counted from 0) of a conversation, naming the
// role when there is one; empty when it is one of the five.
std::string message_role_problem(const nlohmann::json& message, size_t index);

}  // namespace lumen::chat
