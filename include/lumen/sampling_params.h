#pragma once
// What a request asks of decoding: how the next token is chosen, when generation stops, and
// what is reported back. Field names and ranges follow the OpenAI API and vLLM where they have
// one; the exact meaning of each is stated here and implemented by the engine's sampler and stop checks (src/sampling: sampler.h, stopping.h,
// stop_string_matcher.h).
//
// The processing chain, in this fixed order (sampler.h has the details):
//   logit bias -> penalties -> masks (min_tokens, grammar hook) -> temperature -> top-k -> top-p
//   -> min-p -> typical-p -> draw.
//
// Penalties and the tokens they count (`penalty_last_n` chooses the window):
//  - the window is the last `penalty_last_n` tokens of prompt + output (-1: the whole sequence,
//    0: no token, i.e. penalties off), as llama.cpp's window;
//  - repetition_penalty counts every token in the window, prompt included (llama.cpp; vLLM also
//    counts prompt and output). For each distinct token in it: a positive logit is divided by
//    the penalty, a negative one multiplied (CTRL / llama.cpp). Tokens outside it are untouched;
//  - frequency_penalty and presence_penalty count only output tokens in the window (OpenAI,
//    vLLM): logit -= count * frequency_penalty + (count > 0) * presence_penalty. With the
//    default window (-1) this is exactly OpenAI's definition.
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lumen/kv_eviction.h"

namespace lumen {

// Constrained ("structured") output, vLLM's StructuredOutputsParams: at most one of the
// constraints is set, and every generated text is then a sentence of it (src/grammar: each is
// turned into a grammar whose token masks are applied before sampling; an end-of-generation
// token is allowed only where the text is complete). A text cut short by max_tokens or a stop
// string is a prefix of one.
struct StructuredOutputs {
  std::optional<std::string> json = {};            // a JSON Schema (the schema's JSON text)
  bool json_object = false;                        // any JSON object (response_format json_object)
  std::optional<std::string> regex = {};           // the whole output matches it
  std::optional<std::vector<std::string>> choice = {};  // exactly one of these strings
  std::optional<std::string> grammar = {};         // GBNF (llama.cpp's notation)
  // JSON (json, json_object): true, the default, writes it compact, with no whitespace between
  // tokens (OpenAI's output; vLLM's disable_any_whitespace); false allows a bounded amount
  // between tokens, as llama.cpp's converter does. Either way the output ends where the root
  // value closes.
  bool compact_whitespace = true;
  // Control tokens (by their text, e.g. "<|message|>") the grammar may write where its text
  // names them: a server's own constraint on a format that needs them (gpt-oss's harmony tool
  // calls). Empty, the default, for every constraint a client sends: a client's grammar writes
  // plain text only. Texts the vocabulary has no control token for are ignored.
  std::vector<std::string> control_tokens = {};

  // How many constraints are set (validate() wants at most one).
  int count() const {
    return static_cast<int>(json.has_value()) + static_cast<int>(json_object) + static_cast<int>(regex.has_value()) +
           static_cast<int>(choice.has_value()) + static_cast<int>(grammar.has_value());
  }
};

struct SamplingParams {
  // ---- The distribution the next token is drawn from ----
  float temperature = 1.0f;  // >= 0; 0: greedy (the argmax after bias, penalties and masks)
  int32_t top_k = 0;         // 0 or -1: off; k > 0 keeps the k largest logits
  float top_p = 1.0f;        // (0, 1]; 1: off
  float min_p = 0.0f;        // [0, 1]; 0: off
  float typical_p = 1.0f;    // (0, 1]; 1: off

  // ---- Penalties and bias (see above) ----
  float repetition_penalty = 1.0f;  // > 0; 1: off
  float frequency_penalty = 0.0f;   // [-2, 2]; 0: off
  float presence_penalty = 0.0f;    // [-2, 2]; 0: off
  int32_t penalty_last_n = -1;      // >= -1: the window in tokens; -1 all, 0 none
  // Added to the token's logit before anything else: finite values in [-100, 100] (OpenAI's
  // range), or -infinity to ban the token outright.
  std::map<int32_t, float> logit_bias;

  // Seeds the request's own generator (std::mt19937_64); absent: std::random_device. Choice i
  // of the request (n, best_of) draws from seed_of_choice(seed, i), a mix of both
  // (src/sampling/seed_stream.h), so no two seeds share a choice's samples.
  std::optional<uint64_t> seed;

  // ---- Stopping ----
  int64_t max_tokens = 16;  // >= 1: at most this many generated tokens (FinishReason::Length)
  // The first min_tokens generated tokens never end the sequence: stop token ids and (unless
  // ignore_eos) end-of-generation tokens are masked to -inf while fewer than min_tokens tokens
  // were generated, and stop strings are looked for only in the text of later tokens.
  int64_t min_tokens = 0;               // [0, max_tokens]
  std::vector<std::string> stop;        // non-empty strings; the output ends just before one
  std::vector<int32_t> stop_token_ids;  // token ids that end the sequence (FinishReason::Stop)
  bool ignore_eos = false;              // end-of-generation tokens do not end the sequence

  // ---- Constrained output ----
  std::optional<StructuredOutputs> structured_outputs;
  // ---- What is reported ----
  // Absent: no log-probabilities. k in 0..20: the chosen token's log-probability and the k
  // most likely alternatives (from the distribution after bias, penalties and masks, before temperature and the filters;
  // src/sampling/sampler.h, SampleResult).
  std::optional<int32_t> logprobs;
  std::optional<int32_t> prompt_logprobs;  // the same, per prompt position (0..20)
  // Leave control tokens' text (end-of-generation, <|im_start|>...) out of the output text, as
  // vLLM's skip_special_tokens. Their ids and log-probabilities are still reported.
  bool skip_special_tokens = true;
  // With skip_special_tokens off: whether the token that stops the output (end-of-generation,
  // or one of stop_token_ids) adds its own text at the end, as vLLM's output does (true). A
  // server that reads the control tokens inside a reply but wants no end marker after it
  // (gpt-oss's harmony chats, as llama-server returns them) sets it false.
  bool stop_token_text = true;

  // Importance-based KV eviction for this request (lumen/kv_eviction.h), instead of the
  // engine's (EngineConfig::kv_importance); method None turns it off. Checked against the
  // engine when the request is added.
  std::optional<KvImportance> kv_eviction;

  // ---- Several sequences per request (lumen::Engine::add_request_n) ----
  int32_t n = 1;                   // >= 1
  std::optional<int32_t> best_of;  // >= n
  bool use_beam_search = false;
  float length_penalty = 1.0f;  // finite
  bool early_stopping = false;

  // Throws lumen::Error naming the first out-of-range field.
  void validate() const;
  // validate(), and token ids (logit_bias keys, stop_token_ids) inside [0, vocab_size).
  void validate_for_vocab(int64_t vocab_size) const;

  // Whether any penalty changes a logit.
  bool has_penalties() const {
    return penalty_last_n != 0 &&
           (repetition_penalty != 1.0f || frequency_penalty != 0.0f || presence_penalty != 0.0f);
  }
};

// The most alternatives `logprobs` and `prompt_logprobs` may ask for (OpenAI's limit).
inline constexpr int32_t kMaxLogprobs = 20;
// Stop strings per request and bytes per stop string (vLLM and OpenAI allow 4 strings; 16 of
// up to 256 bytes cover real use and keep the held-back text small).
inline constexpr size_t kMaxStopStrings = 16;
inline constexpr size_t kMaxStopStringBytes = 256;

}  // namespace lumen
