// `lumen chat`: an interactive conversation with the model through its chat template. Each turn
// re-renders the whole conversation and feeds only the tokens after the part already in the
// KV cache.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <unistd.h>

#include "cli/device_option.h"
#include "cli/interrupt.h"
#include "cli/line_reader.h"
#include "chat/builtin_templates.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/sampling_options.h"
#include "engine/chat_prompt.h"
#include "engine/generator.h"
#include "engine/loaded_model.h"
#include "sampling/sampler.h"
#include "tokenizer/streaming_detokenizer.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ChatOptions {
  std::string model;
  std::string template_name;
  std::string system;
  int64_t max_reply = 512;
  int64_t context = 4096;
  unsigned threads = 0;
  std::string device;
  sampling::SamplingParams sampling;
};

std::string template_text(const ChatOptions& options, const gguf::GgufFile& file) {
  if (!options.template_name.empty()) {
    auto text = chat::builtin_chat_template(options.template_name);
    if (!text) fail("unknown chat template '{}' (see `lumen chat-template list`)", options.template_name);
    return std::string(*text);
  }
  auto text = file.metadata().find_string("tokenizer.chat_template");
  if (!text) fail("the model has no chat template: choose one with --chat-template NAME");
  return *text;
}

std::string token_text(const tokenizer::Vocab& vocab, std::optional<int32_t> id) {
  return id ? vocab.tokens[static_cast<size_t>(*id)] : std::string();
}

void chat_loop(const ChatOptions& options) {
  const std::unique_ptr<backend::Backend> device = make_backend(options.device, options.threads);
  backend::Backend& backend = *device;
  engine::LoadedModel model = engine::LoadedModel::load(resolve_model_path(options.model), backend);
  const auto chat_template = chat::ChatTemplate::parse(template_text(options, *model.file));
  const auto& vocab = model.tokenizer.vocab();
  const int64_t context =
      std::min<int64_t>(options.context, static_cast<int64_t>(model.hparams.context_length));
  engine::Generator generator(model, backend, context);
  options.sampling.validate_for_vocab(static_cast<int64_t>(vocab.size()));
  // One sampler per reply, whose penalties see that turn's prompt (the conversation so far);
  // turn t draws from seed + t, so a seeded chat replays exactly.
  const uint64_t seed = options.sampling.seed.value_or(std::random_device{}());
  uint64_t turn = 0;

  engine::ChatPromptOptions prompt_options;
  prompt_options.render.add_generation_prompt = true;
  prompt_options.render.bos_token = token_text(vocab, vocab.special.bos);
  prompt_options.render.eos_token = token_text(vocab, vocab.special.eos);

  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  if (!options.system.empty()) messages.push_back({{"role", "system"}, {"content", options.system}});
  std::vector<int32_t> in_cache;  // tokens whose K/V the generator holds, in order
  const bool interactive = isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0;
  LineReader reader(interactive, "> ");
  // Ctrl-C while a reply streams ends that reply and returns to the prompt; at the prompt (or a
  // second time during a reply) it quits.
  InterruptHandler interrupt;
  for (;;) {
    interrupt.disarm();
    std::optional<std::string> input = reader.read();
    if (!input || *input == "/exit") break;
    const std::string& line = *input;
    if (line.empty()) continue;
    interrupt.arm();
    messages.push_back({{"role", "user"}, {"content", line}});
    std::vector<int32_t> prompt =
        engine::chat_prompt_tokens(chat_template, model.tokenizer, messages, prompt_options);
    // A model that wants BOS gets exactly one, whether or not its template writes it.
    if (vocab.special.add_bos && (prompt.empty() || prompt[0] != *vocab.special.bos)) {
      prompt.insert(prompt.begin(), *vocab.special.bos);
    }
    size_t common = 0;
    while (common < in_cache.size() && common < prompt.size() && in_cache[common] == prompt[common]) ++common;
    if (common == prompt.size()) --common;  // feed at least one token to get logits
    generator.truncate(static_cast<int64_t>(common));
    in_cache.resize(common);
    if (static_cast<int64_t>(prompt.size()) + options.max_reply > context) {
      fail("the conversation no longer fits the {}-token context", context);
    }
    std::span<const float> logits = generator.feed(std::span(prompt).subspan(common));
    in_cache = prompt;

    tokenizer::StreamingDetokenizer detokenizer(model.tokenizer, {.skip_special = true});
    sampling::SamplingParams params = options.sampling;
    params.seed = seed + turn++;
    sampling::Sampler sampler(params, prompt, vocab.end_of_generation);
    std::string reply;
    for (int64_t n = 0; n < options.max_reply && !interrupt.interrupted(); ++n) {
      const int32_t next = sampler.sample(logits).token;
      sampler.accept(next);
      if (vocab.ends_generation(next)) break;
      std::string text = detokenizer.push(next);
      reply += text;
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
      logits = generator.feed(std::span(&next, 1));
      in_cache.push_back(next);
    }
    std::string rest = detokenizer.flush();
    reply += rest;
    std::fwrite(rest.data(), 1, rest.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    messages.push_back({{"role", "assistant"}, {"content", reply}});
  }
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto options = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat", "Chat with the model: one message per line on stdin, replies on stdout (/exit ends)");
  cmd->footer(
      "In a terminal: line editing and history (kept in $LUMEN_HOME/chat_history); Ctrl-C stops the "
      "reply being written and returns to the prompt, Ctrl-C at the prompt or Ctrl-D quits. Piped: "
      "one message per input line, only the replies on stdout.");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("--chat-template", options->template_name,
                  "Built-in template instead of the model's (lumen chat-template list)");
  cmd->add_option("--system", options->system, "System message");
  cmd->add_option("-n,--max-reply", options->max_reply, "Most tokens per reply")->capture_default_str();
  add_sampling_options(cmd, options->sampling);
  cmd->add_option("-t,--threads", options->threads, "Threads (default: all cores)");
  add_device_option(cmd, options->device);
  cmd->add_option("-c,--ctx-size", options->context, "Context length in tokens, capped at the model's (serve defaults to the model's whole context: its KV cache is paged and shared, --max-model-len)")->capture_default_str();
  cmd->callback([options] { chat_loop(*options); });
}

}  // namespace lumen::cli
