#include "server/embeddings_request.h"

#include <fmt/format.h>

#include <bit>
#include <cstring>
#include <string>

#include "server/api_error.h"
#include "server/request_fields.h"

namespace lumen::server {

namespace {

const char* const kShape =
    "'input' must be a string, a list of strings, a list of token ids or a list of lists of token ids";

void check_length(size_t index, size_t n_tokens, const EmbeddingLimits& limits) {
  if (n_tokens == 0) invalid("input", "input {} is empty", index);
  if (static_cast<int64_t>(n_tokens) > limits.max_input_tokens) {
    invalid("input", "input {} has {} tokens; at most {} per input", index, n_tokens, limits.max_input_tokens);
  }
}

std::vector<int32_t> text_input(size_t index, const std::string& text, const Model& model,
                                const EmbeddingLimits& limits) {
  if (text.empty()) invalid("input", "input {} is empty", index);
  // Tokenizing a huge text only to refuse it is the cost a client could impose: a text of more
  // than 64 bytes per allowed token is refused first (no tokenizer's tokens average that many
  // bytes, so no text that would fit is refused).
  if (static_cast<int64_t>(text.size()) > 64 * limits.max_input_tokens) {
    invalid("input", "input {} has {} bytes, far more than {} tokens hold", index, text.size(),
            limits.max_input_tokens);
  }
  std::vector<int32_t> tokens = model.tokenize(text, {.add_special = true, .parse_special = false});
  check_length(index, tokens.size(), limits);
  return tokens;
}

std::vector<int32_t> token_input(size_t index, const nlohmann::json& ids, const EmbeddingLimits& limits) {
  check_length(index, ids.size(), limits);
  std::vector<int32_t> tokens;
  tokens.reserve(ids.size());
  for (const auto& id : ids) {
    const std::optional<int64_t> value = as_integer(id, 0, limits.vocab_size - 1);
    if (!value) invalid("input", "input {} holds a token id outside [0, {})", index, limits.vocab_size);
    tokens.push_back(static_cast<int32_t>(*value));
  }
  return tokens;
}

void check_count(size_t n, const EmbeddingLimits& limits) {
  if (static_cast<int64_t>(n) > limits.max_inputs) {
    invalid("input", "{} inputs; at most {} per request", n, limits.max_inputs);
  }
}

// Counts inputs' tokens as they are read, so a request over the total is refused without
// tokenizing the rest; texts are first held to the same 64 bytes per token as one input is.
class RequestTotal {
 public:
  explicit RequestTotal(const EmbeddingLimits& limits) : limits_(limits) {}

  void add_text_bytes(size_t n) {
    bytes_ += static_cast<int64_t>(n);
    if (bytes_ > 64 * limits_.max_request_tokens) refuse(fmt::format("{} bytes of text, far more than", bytes_));
  }
  void add_tokens(size_t n) {
    tokens_ += static_cast<int64_t>(n);
    if (tokens_ > limits_.max_request_tokens) refuse(fmt::format("{} tokens, more than", tokens_));
  }

 private:
  [[noreturn]] void refuse(const std::string& held) const {
    invalid("input",
            "the inputs hold {} the {} tokens one request may hold in all (--max-embedding-request-tokens); "
            "split them over several requests",
            held, limits_.max_request_tokens);
  }

  const EmbeddingLimits& limits_;
  int64_t bytes_ = 0;
  int64_t tokens_ = 0;
};

}  // namespace

EmbeddingsRequest parse_embeddings_request(const nlohmann::json& body, const Model& model,
                                           const EmbeddingLimits& limits) {
  const RequestFields fields(body);
  EmbeddingsRequest out;
  const std::string format = fields.string("encoding_format").value_or("float");
  if (format != "float" && format != "base64") {
    invalid("encoding_format", "'encoding_format' must be \"float\" or \"base64\" (got \"{}\")", format.substr(0, 40));
  }
  out.base64 = format == "base64";
  if (std::optional<int64_t> dims = fields.integer("dimensions", 1, INT32_MAX); dims && *dims != limits.dimensions) {
    invalid("dimensions",
            "'dimensions' = {} is not supported: this model's embeddings have {} dimensions and Lumen does not "
            "shorten them (leave the field out, or give {})",
            *dims, limits.dimensions, limits.dimensions);
  }
  const nlohmann::json* input = fields.find("input");
  if (input == nullptr) invalid("input", "'input' is required");
  RequestTotal total(limits);
  if (input->is_string()) {
    total.add_text_bytes(input->get_ref<const std::string&>().size());
    out.inputs.push_back(text_input(0, input->get<std::string>(), model, limits));
    total.add_tokens(out.inputs.back().size());
    return out;
  }
  if (!input->is_array() || input->empty()) {
    if (input->is_array()) invalid("input", "'input' is an empty list");
    invalid("input", "{}", kShape);
  }
  const nlohmann::json& first = input->front();
  if (first.is_number()) {  // one input of token ids
    out.inputs.push_back(token_input(0, *input, limits));
    total.add_tokens(out.inputs.back().size());
    return out;
  }
  check_count(input->size(), limits);
  for (const nlohmann::json& item : *input) {
    if (item.is_string()) total.add_text_bytes(item.get_ref<const std::string&>().size());
  }
  for (size_t i = 0; i < input->size(); ++i) {
    const nlohmann::json& item = (*input)[i];
    // The items are all of the first's kind, as OpenAI's schema has them.
    if (first.is_string() && item.is_string()) {
      out.inputs.push_back(text_input(i, item.get<std::string>(), model, limits));
    } else if (first.is_array() && item.is_array()) {
      out.inputs.push_back(token_input(i, item, limits));
    } else {
      invalid("input", "{}", kShape);
    }
    total.add_tokens(out.inputs.back().size());
  }
  return out;
}

std::string base64_floats(const std::vector<float>& values) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes(values.size() * sizeof(float), '\0');
  for (size_t i = 0; i < values.size(); ++i) {
    auto word = std::bit_cast<uint32_t>(values[i]);
    for (size_t b = 0; b < 4; ++b) bytes[i * 4 + b] = static_cast<char>((word >> (8 * b)) & 0xFF);  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t group = 0;
    for (size_t b = 0; b < 3; ++b) {
      group = (group << 8) | (b < n ? static_cast<unsigned char>(bytes[i + b]) : 0u);
    }
    for (size_t c = 0; c < 4; ++c) out += c <= n ? kAlphabet[(group >> (18 - 6 * c)) & 0x3F] : '=';
  }
  return out;
}

nlohmann::json embedding_entry(size_t index, const std::vector<float>& vector, bool base64) {
  nlohmann::json entry = {{"object", "embedding"}, {"index", index}};
  if (base64) {
    entry["embedding"] = base64_floats(vector);
  } else {
    entry["embedding"] = vector;
  }
  return entry;
}

}  // namespace lumen::server
