// A program that uses Lumen as a library, through include/lumen alone (it is built without
// src/ on its include path): load the default model, tokenize, render a chat, generate greedily
// with streaming and in batch, move a computed prompt's K/V to a second engine (disaggregated
// prefill), and check what comes back. Exit status 0 when all holds.
#include <cstdio>
#include <cstdlib>
#include <future>
#include <optional>
#include <string>
#include <vector>

#include "lumen/constraint_error.h"
#include "lumen/engine.h"
#include "lumen/engine_config.h"
#include "lumen/error.h"
#include "lumen/model.h"
#include "lumen/prompt_kv_exchange.h"

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

  // What the server and the Python package need from the model, without internals: the chat
  // template's text (its tool-call format) and the role check.
  expect(model.chat_template_source().find("<|im_start|>") != std::string::npos, "SmolLM2's template source");
  expect(lumen::chat_message_role_problem({{"role", "user"}, {"content", "x"}}, 0).empty() &&
             lumen::chat_message_role_problem({{"role", "wizard"}, {"content", "x"}}, 1).find("wizard") !=
                 std::string::npos,
         "the role check");
  const lumen::SpeculativeConfig ngram =
      lumen::SpeculativeConfig::from_json(R"({"method": "ngram", "num_speculative_tokens": 3})");
  expect(ngram.method == lumen::SpeculativeMethod::Ngram && ngram.num_speculative_tokens == 3,
         "speculative_config JSON");
  try {
    lumen::SpeculativeConfig::from_json(R"({"method": "ngram"})", "--flag");
    expect(false, "a speculative config without num_speculative_tokens throws");
  } catch (const lumen::Error& e) {
    expect(std::string(e.what()).rfind("--flag: ", 0) == 0, "the speculative config's error starts with its label");
  }
  // An output constraint that does not compile is a ConstraintError, and queues nothing.
  lumen::SamplingParams constrained = greedy;
  constrained.structured_outputs = lumen::StructuredOutputs{.grammar = "root ::= undefined_rule"};
  try {
    engine.add_request(prompt, constrained);
    expect(false, "a grammar with an undefined rule throws");
  } catch (const lumen::ConstraintError&) {
  }
  expect(!engine.has_unfinished(), "a refused constraint queues nothing");

  // Disaggregated prefill through its own interface: the prefill engine keeps the prompt's
  // K/V, the decode engine imports it and generates what computing it there gives.
  lumen::Engine prefill(
      model, {.max_num_seqs = 4, .kv_cache_bytes = int64_t{64} << 20, .prompt_kv_store_bytes = int64_t{16} << 20});
  lumen::RequestHandle prefilled = prefill.add_request(prompt, greedy);
  while (prefill.step()) {
  }
  prefilled.collect();
  lumen::Engine decode(model, {.max_num_seqs = 4, .kv_cache_bytes = int64_t{64} << 20});
  lumen::PromptKvExchange sender(prefill), receiver(decode);
  std::future<int64_t> known = receiver.cached_prompt_tokens(prompt, 0);
  decode.step();
  const std::optional<lumen::PromptKv> kv = sender.take_prompt_kv(prefilled.id(), prompt, 0, known.get());
  expect(kv.has_value() && !kv->pages.empty() && sender.stats().taken == 1, "the prefill engine hands its K/V out");
  if (kv) {
    std::future<int64_t> imported = receiver.import_prompt_kv(prompt, *kv);
    decode.step();
    expect(imported.get() == static_cast<int64_t>(kv->tokens.size()), "the decode engine imports every position");
    expect(decode.generate({prompt}, greedy).at(0).tokens == batch[0].tokens, "the moved prompt decodes the same");
    expect(receiver.stats().imported_tokens == kv->tokens.size(), "the decode engine counts what it imported");
  }

  try {
    lumen::Model::load("/nonexistent.gguf");
    expect(false, "a missing file throws lumen::Error");
  } catch (const lumen::Error&) {
  }
  std::printf("%s\n", batch[0].text.c_str());
  return failures == 0 ? 0 : 1;
}
