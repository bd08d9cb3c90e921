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

}  // namespace lumen::chat
