// `lumen chat`'s /image (chat_images.h).
#include "cli/chat_images.h"

#include <span>

#include "cli/run_images.h"
#include "lumen/image_markers.h"
#include "util/error.h"

namespace lumen::cli {

void ChatImages::attach(const std::string& path) {
  if (path.empty()) fail("/image needs a file: /image PATH");
  if (!model_.image_encoder()) {
    fail("/image needs a vision-language model's projector file: start lumen chat with --mmproj");
  }
  if (conversation_.size() + pending_.size() >= kMaxImages) {
    fail("a conversation holds at most {} images (/reset starts a new one)", kMaxImages);
  }
  const std::string bytes = read_image_file(path);
  try {
    pending_.push_back(engine_.encode_image(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size())));
  } catch (const Error& e) {
    fail("{}: {}", path, e.what());
  }
}

nlohmann::ordered_json ChatImages::take_user_content(const std::string& text) {
  last_taken_ = pending_.size();
  if (pending_.empty()) return text;
  nlohmann::ordered_json parts = nlohmann::ordered_json::array();
  for (size_t i = 0; i < pending_.size(); ++i) parts.push_back({{"type", "image"}});
  parts.push_back({{"type", "text"}, {"text", text}});
  conversation_.insert(conversation_.end(), pending_.begin(), pending_.end());
  pending_.clear();
  return parts;
}

void ChatImages::untake() {
  pending_.assign(conversation_.end() - static_cast<std::ptrdiff_t>(last_taken_), conversation_.end());
  conversation_.resize(conversation_.size() - last_taken_);
  last_taken_ = 0;
}

std::vector<PromptImage> ChatImages::place(std::vector<int32_t>& prompt) const {
  if (conversation_.empty()) return {};
  return place_images_at_markers(model_, model_.image_encoder()->image_marker(), prompt, conversation_);
}

void ChatImages::clear() {
  conversation_.clear();
  pending_.clear();
  last_taken_ = 0;
}

}  // namespace lumen::cli
