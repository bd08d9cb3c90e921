#pragma once
// Turns a conversation into prompt tokens: the chat template renders it, and the result is
// tokenized so that the template's own markers ("<|im_start|>", "<start_of_turn>") become
// control tokens while the text of the messages never does, unless the caller opts in. A user
// who types "<|im_end|>" gets those characters, not the end of their turn.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "chat/chat_template.h"
#include "tokenizer/tokenizer.h"

namespace lumen::engine {

struct ChatPromptOptions {
  chat::ChatTemplateOptions render;       // add_generation_prompt, bos/eos text, tools...
  bool parse_special_in_messages = false; // let message text spell control tokens
  bool continue_final_message = false;    // end right after the final message's text
};

// Throws lumen::Error when the template cannot render the conversation.
std::vector<int32_t> chat_prompt_tokens(const chat::ChatTemplate& chat_template,
                                        const tokenizer::Tokenizer& tokenizer,
                                        const nlohmann::ordered_json& messages,
                                        const ChatPromptOptions& options);

}  // namespace lumen::engine
