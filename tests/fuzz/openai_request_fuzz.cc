// Arbitrary request bodies through the OpenAI request parsers: /v1/completions' options, and
// /v1/chat/completions' messages, options and prompt rendering with the ChatML template and a
// real tokenizer (a vocabulary-only lumen::Model). A client controls every byte; anything but a result or an ApiError / Error
// (a clean 4xx or 500) is a finding.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include <nlohmann/json.hpp>

#include "lumen/model.h"
#include "server/api_error.h"
#include "server/chat_request.h"
#include "server/json_body.h"
#include "server/sampling_request.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const lumen::Model model = lumen::Model::load(LUMEN_TESTDATA_DIR "/tokenizer/ggml-vocab-qwen2.gguf",
                                                       {.chat_template = "chatml", .vocab_only = true});
  lumen::server::ServingLimits limits;
  limits.vocab_size = model.info().vocab_size;
  limits.max_model_len = 4096;
  limits.max_rendered_prompt_bytes = 1 << 20;
  std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    const nlohmann::json json = lumen::server::parse_json_body(std::string(body));
    try {
      (void)lumen::server::parse_generation_options(json, lumen::server::Endpoint::Completions, limits);
    } catch (const lumen::server::ApiError&) {
    }
    (void)lumen::server::parse_chat_request(json, model, limits);
  } catch (const lumen::server::ApiError&) {
  } catch (const lumen::Error&) {
  }
  return 0;
}
