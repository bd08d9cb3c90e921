#pragma once
// Named chat templates for `--chat-template NAME`, for models whose GGUF carries no template
// (or a wrong one). Lumen's own Jinja, written for this project, not copied from a vendor; the
// golden test renders each against the vendor template it stands in for and requires the same
// bytes on every conversation both accept.
#include <optional>
#include <string_view>
#include <vector>

namespace lumen::chat {

std::optional<std::string_view> builtin_chat_template(std::string_view name);
std::vector<std::string_view> builtin_chat_template_names();

// The built-in template a model family uses when its file carries none (Gemma 3's GGUF
// conversions often do not: the template lives in the Hugging Face repository's
// tokenizer_config.json instead); nullopt for other architectures.
std::optional<std::string_view> builtin_chat_template_name_for_architecture(std::string_view architecture);

}  // namespace lumen::chat
