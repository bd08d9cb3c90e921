#include "tokenizer/streaming_detokenizer.h"

#include "tokenizer/utf8.h"

namespace lumen::tokenizer {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, DecodeOptions options)
    : tokenizer_(&tokenizer),
      options_(options),
      strip_pending_(options.strip_leading_space && tokenizer.strips_leading_space()) {}

std::string StreamingDetokenizer::push(int32_t id) {
  if (options_.skip_special && tokenizer_->is_special(id)) return {};
  std::string bytes = tokenizer_->token_bytes(id);
  if (bytes.empty()) return {};
  if (strip_pending_) {
    if (bytes.front() == ' ') bytes.erase(0, 1);
    strip_pending_ = false;
  }
  pending_ += bytes;
  size_t ready = complete_prefix_length(pending_);
  if (ready == 0) return {};
  std::string text = sanitize_utf8(std::string_view(pending_).substr(0, ready));
  pending_.erase(0, ready);
  return text;
}

std::string StreamingDetokenizer::flush() {
  std::string text = sanitize_utf8(pending_);
  pending_.clear();
  return text;
}

}  // namespace lumen::tokenizer
