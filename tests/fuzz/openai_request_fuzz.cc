// Arbitrary request bodies through the OpenAI request parsers: /v1/completions' options, and
// /v1/chat/completions' messages, options and prompt rendering with the ChatML template and a
// real tokenizer. A client controls every byte; anything but a result or an ApiError / Error
// (a clean 4xx or 500) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "chat/builtin_templates.h"
#include "gguf/file.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/json_body.h"
#include "server/sampling_request.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto tokenizer = lumen::tokenizer::Tokenizer::from_gguf(
      lumen::gguf::GgufFile::open(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-qwen2.gguf"));
  static const auto chatml = lumen::chat::ChatTemplate::parse(*lumen::chat::builtin_chat_template("chatml"));
  lumen::server::ServingLimits limits;
  limits.vocab_size = static_cast<int64_t>(tokenizer.vocab().size());
  limits.max_model_len = 4096;
  limits.max_rendered_prompt_bytes = 1 << 20;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json json = lumen::server::parse_json_body(std::string(body));
    try {
      (void)lumen::server::parse_generation_options(json, lumen::server::Endpoint::Completions, limits);
    } catch (const lumen::server::ApiError&) {
    }
    (void)lumen::server::parse_chat_request(json, chatml, tokenizer, limits);
  } catch (const lumen::server::ApiError&) {
  } catch (const lumen::Error&) {
  }
  return 0;
}
