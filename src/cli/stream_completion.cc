#include "cli/stream_completion.h"

#include <chrono>

#include "util/error.h"

namespace lumen::cli {

EngineConfig single_user_config(int64_t context, int32_t sequences) {
  EngineConfig config;
  config.max_model_len = context;
  config.max_num_seqs = sequences;
  config.kv_cache_full_sequences = sequences;
  return config;
}

StreamedCompletion stream_completion(Engine& engine, std::vector<int32_t> prompt, const SamplingParams& params,
                                     const InterruptHandler& interrupt,
                                     const std::function<void(const std::string&)>& show,
                                     std::vector<PromptImage> images) {
  using Clock = std::chrono::steady_clock;
  const auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  const auto start = Clock::now();
  RequestHandle handle = engine.add_request_n(std::move(prompt), params, 0, 0, 0, std::move(images)).front();
  StreamedCompletion out;
  bool aborted = false;
  StreamChunk chunk;
  for (bool finished = false; !finished;) {
    if (interrupt.interrupted() && !aborted) {
      engine.abort(handle.id());
      aborted = true;
    }
    engine.step();
    while (!finished && handle.try_next(chunk)) {
      for (const GeneratedToken& token : chunk.tokens) {
        // A step that was running when Ctrl-C came still hands back its token: the user asked
        // for the text to stop, so it is neither shown nor kept (chat's history holds what was
        // shown).
        if (interrupt.interrupted()) break;
        if (out.tokens.empty()) out.first_token_seconds = seconds_since(start);
        out.tokens.push_back(token.token);
        out.text += token.text;
        if (!token.text.empty()) show(token.text);
      }
      if (chunk.finished) {
        finished = true;
        out.finish = chunk.finish_reason;
        if (chunk.finish_reason == FinishReason::Error) fail("the generation failed: {}", chunk.error);
      }
    }
  }
  out.total_seconds = seconds_since(start);
  if (out.tokens.empty()) out.first_token_seconds = out.total_seconds;
  return out;
}

}  // namespace lumen::cli
