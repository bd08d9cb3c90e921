// `lumen embed`: sentence embeddings from the command line, in the JSON `/v1/embeddings`
// answers with, so a script gets the same vectors from either. Each -p is one input; without
// -p every non-empty line of standard input is one. The vectors come from the same engine path
// as the server's (Engine::embed: pooled as the model's pooling_type says, L2-normalised).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <chrono>
#include <filesystem>
#include <future>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/device_option.h"
#include "cli/stream_completion.h"
#include "lumen/engine.h"
#include "lumen/model.h"
#include "server/api_error.h"
#include "server/embeddings_request.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct EmbedOptions {
  std::string model;
  std::vector<std::string> prompts;  // -p, each one input; none: the lines of standard input
  bool base64 = false;
  unsigned threads = 0;
  std::string device;
};

std::vector<std::string> stdin_lines() {
  std::vector<std::string> lines;
  for (std::string line; std::getline(std::cin, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(std::move(line));
  }
  return lines;
}

void run_embed(const EmbedOptions& options) {
  const std::vector<std::string> texts = options.prompts.empty() ? stdin_lines() : options.prompts;
  if (texts.empty()) fail("nothing to embed: give -p TEXT, or lines on standard input");
  const std::string path = resolve_model_path(options.model);
  const Model model = Model::load(path, {.device = options.device, .threads = options.threads});
  std::vector<std::vector<int32_t>> inputs;
  int64_t longest = 0, total = 0;
  for (size_t i = 0; i < texts.size(); ++i) {
    inputs.push_back(model.tokenize(texts[i], {.add_special = true, .parse_special = false}));
    if (inputs.back().empty()) fail("input {} has no tokens", i);
    longest = std::max<int64_t>(longest, static_cast<int64_t>(inputs.back().size()));
    total += static_cast<int64_t>(inputs.back().size());
  }
  if (longest > model.info().context_length) {
    fail("an input has {} tokens; the model's context holds {}", longest, model.info().context_length);
  }
  // Room for up to 64 of the longest inputs in one pass (fewer when there are fewer).
  EngineConfig config = single_user_config(longest, static_cast<int32_t>(std::min<size_t>(inputs.size(), 64)));
  config.max_num_batched_tokens = std::max<int64_t>(config.max_num_batched_tokens, longest);
  Engine engine(model, config);
  std::future<std::vector<std::vector<float>>> result = engine.embed(std::move(inputs));
  // The work queued above runs on this thread, one pass per step.
  while (result.wait_for(std::chrono::seconds(0)) != std::future_status::ready) engine.step();
  const std::vector<std::vector<float>> vectors = result.get();
  nlohmann::json data = nlohmann::json::array();
  for (size_t i = 0; i < vectors.size(); ++i) data.push_back(server::embedding_entry(i, vectors[i], options.base64));
  const nlohmann::json reply = {{"object", "list"},
                                {"data", std::move(data)},
                                {"model", std::filesystem::path(path).stem().string()},  // as serve names it
                                {"usage", {{"prompt_tokens", total}, {"total_tokens", total}}}};
  const std::string text = server::dump_json(reply) + "\n";
  std::fwrite(text.data(), 1, text.size(), stdout);
  fmt::print(stderr, "lumen embed: {} input{}, {} tokens, {} dimensions, {} pooling, L2-normalised\n", vectors.size(),
             vectors.size() == 1 ? "" : "s", total, engine.embedding_dimensions(), engine.embedding_pooling());
}

}  // namespace

void add_embed_command(CLI::App& app) {
  auto options = std::make_shared<EmbedOptions>();
  CLI::App* cmd = app.add_subcommand(
      "embed",
      "Print the embeddings of each -p text (or of each non-empty line of standard input) as /v1/embeddings' JSON: "
      "the final hidden states pooled as the model's pooling_type says (last token for a decoder without one), "
      "L2-normalised");
  cmd->add_option("-m,--model", options->model, "GGUF file or catalog name (default: the default model)");
  cmd->add_option("-p,--prompt", options->prompts, "A text to embed (repeat for several)");
  cmd->add_flag("--base64", options->base64,
                "Each vector as the base64 of its little-endian float32 bytes (encoding_format base64)");
  cmd->add_option("-t,--threads", options->threads, "Threads (default: all cores)");
  add_device_option(cmd, options->device);
  cmd->callback([options] { run_embed(*options); });
}

}  // namespace lumen::cli
