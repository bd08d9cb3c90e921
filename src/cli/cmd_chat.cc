// `lumen chat`: an interactive conversation with the model through its chat template. Each turn
// re-renders the whole conversation and submits it to the engine, whose prefix cache holds the
// part computed in earlier turns.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <unistd.h>

#include "cli/chat_commands.h"
#include "cli/chat_images.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/device_option.h"
#include "cli/kv_cache_dtype_flag.h"
#include "cli/interrupt.h"
#include "cli/line_reader.h"
#include "cli/sampling_options.h"
#include "cli/structured_output_flags.h"
#include "cli/speculative_flag.h"
#include "cli/stream_completion.h"
#include "sampling/seed_stream.h"
#include "server/harmony_split.h"
#include "lumen/engine.h"
#include "lumen/model.h"
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
  std::string mmproj;  // a vision-language model's projector file: /image attaches images
  SamplingParams sampling;
  SpeculativeFlag speculative;
  KvCacheDtypeFlag kv_cache_dtype;
};

void chat_loop(const ChatOptions& options) {
  const SpeculativeConfig speculative = options.speculative.config();  // a bad config fails before loading
  const std::string path = resolve_model_path(options.model);
  if (const std::string warning = base_model_chat_warning(path); !warning.empty()) {
    fmt::print(stderr, "lumen chat: warning: {}\n", warning);
  }
  const Model model = Model::load(path, {.device = options.device,
                                         .threads = options.threads,
                                         .chat_template = options.template_name,
                                         .mmproj = options.mmproj});
  if (!model.has_chat_template()) fail("{}: choose one with --chat-template NAME", model.chat_template_problem());
  const int64_t context = std::min<int64_t>(options.context, model.info().context_length);
  options.sampling.validate_for_vocab(model.info().vocab_size);
  // The prefix cache keeps the conversation's K/V from turn to turn: each turn computes only
  // the tokens after the part already cached.
  EngineConfig config = single_user_config(context, 1);
  config.kv_cache_dtype = options.kv_cache_dtype.value();
  config.kv_cache_rotation = options.kv_cache_dtype.rotation();
  // A chat reply often quotes the conversation (code being edited, a passage being summarized),
  // which is where n-gram speculation finds its drafts.
  config.speculative = speculative;
  config.jump_forward = !options.speculative.no_jump_forward;
  Engine engine(model, config);
  // Each reply's penalties see that turn's prompt (the conversation so far); turn t draws from
  // seed_of_choice(seed, t), so a seeded chat replays exactly and shares no turn's draws with
  // another seed's chat.
  const uint64_t seed = options.sampling.seed.value_or(std::random_device{}());
  uint64_t turn = 0;

  std::string system = options.system;
  const bool harmony = server::template_is_harmony(model.chat_template_source());
  nlohmann::ordered_json messages;
  ChatImages images(engine, model);
  auto start_conversation = [&] {
    messages = nlohmann::ordered_json::array();
    images.clear();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
  };
  start_conversation();
  const bool interactive = isatty(STDIN_FILENO) != 0 && isatty(STDOUT_FILENO) != 0;
  // On stderr (a terminal only): what is running and how to get out.
  if (interactive) {
    fmt::print(stderr, "lumen chat: {} ({}, {} context)\n{}",
               std::filesystem::path(model.info().path).filename().string(), model.info().weight_type,
               fmt::format("{} tokens", context),
               "Type a message and Enter. /help lists the commands; Ctrl-C stops a reply, Ctrl-D or /exit quits.\n");
  }
  LineReader reader(interactive, "> ");
  // Ctrl-C while a reply streams ends that reply and returns to the prompt; at the prompt (or a
  // second time during a reply) it quits.
  InterruptHandler interrupt;
  for (;;) {
    interrupt.disarm();
    std::optional<std::string> input = reader.read();
    if (!input) {
      // Ctrl-D: the shell's prompt then starts on a line of its own.
      if (interactive) std::fputc('\n', stdout);
      break;
    }
    const ChatLine line = parse_chat_line(*input);
    if (line.kind == ChatLine::Kind::Exit) break;
    if (line.kind == ChatLine::Kind::Help) {
      fmt::print(stderr, "{}", chat_help_text());
      continue;
    }
    if (line.kind == ChatLine::Kind::Reset) {
      start_conversation();
      fmt::print(stderr, "(a new conversation)\n");
      continue;
    }
    if (line.kind == ChatLine::Kind::System) {
      if (line.text.empty()) {
        fmt::print(stderr, "{}\n", system.empty() ? "(no system message)" : system);
        continue;
      }
      system = line.text;
      start_conversation();
      fmt::print(stderr, "(a new conversation under that system message)\n");
      continue;
    }
    if (line.kind == ChatLine::Kind::Image) {
      // A bad file is told here and leaves the conversation as it was: the chat goes on.
      try {
        images.attach(line.text);
        fmt::print(stderr, "({} image{} attached to the next message)\n", images.pending(),
                   images.pending() == 1 ? "" : "s");
      } catch (const Error& e) {
        fmt::print(stderr, "lumen chat: {}\n", e.what());
      }
      continue;
    }
    if (line.kind == ChatLine::Kind::Unknown) {
      fmt::print(stderr, "unknown command {} (/help lists them; //text sends text starting with /)\n", line.text);
      continue;
    }
    if (line.text.empty()) continue;
    interrupt.arm();
    messages.push_back({{"role", "user"}, {"content", images.take_user_content(line.text)}});
    std::vector<int32_t> prompt = model.chat_prompt(messages);
    std::vector<PromptImage> prompt_images;
    try {
      prompt_images = images.place(prompt);
    } catch (const Error& e) {
      // The template did not place the images (it has no image parts): this message is not sent.
      messages.erase(messages.size() - 1);
      images.untake();
      fmt::print(stderr, "lumen chat: {}\n", e.what());
      continue;
    }
    if (static_cast<int64_t>(prompt.size()) + options.max_reply > context) {
      fail("the conversation no longer fits the {}-token context", context);
    }
    SamplingParams params = options.sampling;
    params.seed = sampling::seed_of_choice(seed, turn++);
    params.max_tokens = options.max_reply;
    // gpt-oss's harmony replies: the markers are control tokens, read apart here; its reasoning
    // goes to stderr, its answer to stdout and into the conversation (as its template expects).
    if (harmony) params.skip_special_tokens = false;
    server::HarmonySplit split;
    std::string answer;
    const auto show = [&](const server::ReasoningDelta& d) {
      if (!d.reasoning.empty()) fmt::print(stderr, "{}", d.reasoning);
      std::fwrite(d.content.data(), 1, d.content.size(), stdout);
      std::fflush(stdout);
      answer += d.content;
    };
    const StreamedCompletion reply = stream_completion(
        engine, std::move(prompt), params, interrupt,
        [&](const std::string& text) {
          if (harmony) {
            show(split.add(text));
            return;
          }
          std::fwrite(text.data(), 1, text.size(), stdout);
          std::fflush(stdout);
        },
        std::move(prompt_images));
    if (harmony) show(split.finish());
    std::fputc('\n', stdout);
    std::fflush(stdout);
    messages.push_back({{"role", "assistant"}, {"content", harmony ? answer : reply.text}});
  }
  // On stderr, so that piped stdout still holds only the replies.
  if (speculative.method != SpeculativeMethod::None) fmt::print(stderr, "{}\n", speculation_summary(engine.stats()));
}

}  // namespace

void add_chat_command(CLI::App& app) {
  auto options = std::make_shared<ChatOptions>();
  CLI::App* cmd = app.add_subcommand(
      "chat",
      "Chat with the model: one message per line on stdin, replies on stdout (/help lists the commands, /exit ends)");
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
  add_structured_output_flags(cmd, options->sampling);
  cmd->add_option("-t,--threads", options->threads, "Threads (default: all cores)");
  add_device_option(cmd, options->device);
  cmd->add_option("--mmproj", options->mmproj,
                  "A vision-language model's projector file (llama.cpp's mmproj GGUF): /image PATH attaches images");
  options->speculative.add_to(cmd);
  options->kv_cache_dtype.add_to(cmd);
  cmd->add_option("-c,--ctx-size", options->context,
                  "Context length in tokens, capped at the model's (serve defaults to the model's whole context: its "
                  "KV cache is paged and shared, --max-model-len)")
      ->capture_default_str();
  cmd->callback([options] { chat_loop(*options); });
}

}  // namespace lumen::cli
