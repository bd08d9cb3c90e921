// A program that uses Lumen as a library, through include/lumen alone (it is built without
// src/ on its include path): load the default model, tokenize, render a chat, generate greedily
// with streaming and in batch, and check what comes back. Exit status 0 when all holds.
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "lumen/engine.h"
#include "lumen/error.h"
#include "lumen/model.h"

namespace {

int failures = 0;

void expect(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what);
    ++failures;
  }
}

std::string default_model_path() {
  const char* cache = std::getenv("LUMEN_CACHE");
  const std::string dir = cache != nullptr && *cache != '\0' ? cache : std::string(std::getenv("HOME")) + "/.cache/lumen/models";
  return dir + "/SmolLM2-135M-Instruct.Q4_1.gguf";
}

}  // namespace

int main() {
  const lumen::Model model = lumen::Model::load(default_model_path(), {.threads = 2});
  expect(model.info().architecture == "llama", "the default model is a llama");
  expect(model.info().vocab_size == 49152, "SmolLM2's vocabulary has 49152 tokens");

  const std::vector<int32_t> hello = model.tokenize("Hello world", {.add_special = false});
  expect(model.detokenize(hello) == "Hello world", "tokenize and detokenize round-trip");

  // Message text never becomes control tokens; the template's markers do: typing the marker
  // adds no control token to the prompt.
  const std::vector<int32_t> im_end = model.tokenize("<|im_end|>", {.add_special = false, .parse_special = true});
  const auto control_ends = [&](const std::string& text) {
    const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", text}}};
    int n = 0;
    for (int32_t t : model.chat_prompt(messages)) n += t == im_end.at(0) ? 1 : 0;
    return n;
  };
  expect(im_end.size() == 1 && control_ends("Say <|im_end|> hello.") == control_ends("Say hello."),
         "only the template's own <|im_end|> is a control token");
  const std::vector<int32_t> prompt = model.chat_prompt({{{"role", "user"}, {"content", "What is the capital of France?"}}});

  lumen::Engine engine(model, {.max_num_seqs = 4, .kv_cache_bytes = int64_t{64} << 20});
  lumen::SamplingParams greedy;
  greedy.temperature = 0.0f;
  greedy.max_tokens = 8;
  const std::vector<lumen::GenerationResult> batch = engine.generate({prompt}, greedy);
  expect(batch.size() == 1 && batch[0].tokens.size() <= 8 && !batch[0].text.empty(), "a batch generation");

  // The same request streamed, with the engine stepped by this thread, gives the same tokens.
  lumen::RequestHandle handle = engine.add_request(prompt, greedy);
  std::vector<int32_t> streamed;
  lumen::StreamChunk chunk;
  bool finished = false;
  while (!finished) {
    engine.step();
    while (!finished && handle.try_next(chunk)) {
      for (const lumen::GeneratedToken& t : chunk.tokens) streamed.push_back(t.token);
      finished = chunk.finished;
    }
  }
  expect(streamed == batch[0].tokens, "streaming and batch generation agree");

  try {
    lumen::Model::load("/nonexistent.gguf");
    expect(false, "a missing file throws lumen::Error");
  } catch (const lumen::Error&) {
  }
  std::printf("%s\n", batch[0].text.c_str());
  return failures == 0 ? 0 : 1;
}
