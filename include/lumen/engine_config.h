#pragma once
// How an Engine is sized and scheduled.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "lumen/kv_eviction.h"

namespace lumen {

// The element type of the paged KV cache (vLLM's --kv-cache-dtype, llama.cpp's -ctk / -ctv;
// one type for both K and V). F16 is llama.cpp's default. The others trade accuracy for room:
// Bf16 (round to nearest even), Q8_0 and Q4_0 (ggml's blocks of 32 values with an f16 scale,
// quantized as ggml's reference quantizers do: 8.5 and 4.5 bits per value), Fp8E4m3 (OCP E4M3
// with a scale of 1.0, as vLLM's fp8 cache without calibration: values past +-448 saturate).
// Attention dequantizes a head's rows tile by tile as it reads them. Only the CPU backend has
// the compressed types; another backend refuses them when the Engine is made.
enum class KvCacheDtype { F16, Bf16, Q8_0, Q4_0, Fp8E4m3 };

// "f16", "bf16", "q8_0", "q4_0", "fp8_e4m3" (also vLLM's "auto" for f16 and "fp8"), any case;
// nullopt for anything else.
std::optional<KvCacheDtype> parse_kv_cache_dtype(std::string_view name);
std::string_view kv_cache_dtype_name(KvCacheDtype dtype);
// The accepted names, for an error message: "f16, bf16, q8_0, q4_0, fp8_e4m3".
std::string_view kv_cache_dtype_choices();

enum class SchedulingPolicy { Fcfs, Priority };

// What preemption does with the victim's K/V: drop it and recompute it later (from the prefix
// cache where possible), or copy it to host memory and back (worth it where recomputing costs
// more than the copies: device backends, long sequences).
enum class PreemptionMode { Recompute, Swap };

// What a sequence that reaches max_model_len does: finish (FinishReason::Length, as OpenAI's API
// does), or drop its oldest positions after the first context_keep_tokens and go on (llama.cpp's
// context shift). Beam search always finishes.
enum class ContextOverflow { Finish, Shift };

// Speculative decoding (vLLM's --speculative-config): a proposer guesses the next tokens, one
// forward pass scores them all with the sequence's real next token, and the prefix the target
// model agrees with is kept. Lossless: the output (greedy) or its distribution (sampling) is
// what decoding without it gives. Off unless method is set.
//  - Ngram: prompt lookup (no model);
//  - DraftModel: a smaller GGUF with the target's vocabulary proposes greedily (`model`);
//  - LayerSkip: the target's own first `num_layers` layers, with its final norm and output head,
//    propose greedily (self-speculation: no second file, the draft's weights are the target's).
//  - Lookahead (Fu et al. 2024): Jacobi iterations over a window of guessed future tokens, run
//    as extra rows of the same forward pass, fill a pool of n-grams the model itself produced;
//    an n-gram that starts with the sequence's last token is the draft (no draft model, and the
//    prompt need not contain the answer).
enum class SpeculativeMethod { None, Ngram, DraftModel, LayerSkip, Lookahead };

struct SpeculativeConfig {
  SpeculativeMethod method = SpeculativeMethod::None;
  // Tokens proposed per step at most (1..64).
  int32_t num_speculative_tokens = 0;
  // Ngram (prompt lookup): the longest suffix of the sequence, between prompt_lookup_min and
  // prompt_lookup_max tokens, that occurred before in the prompt or output (its most recent
  // occurrence) proposes the tokens that followed it. 0: as vLLM, the other bound, or 5 for both.
  int32_t prompt_lookup_max = 0;
  int32_t prompt_lookup_min = 0;
  // DraftModel: the draft's GGUF path (its vocabulary must be the target's, token for token).
  std::string model;
  // LayerSkip: how many of the target's leading layers make the draft (1 .. the target's - 1;
  // the upper bound is checked when the Engine knows the target).
  int32_t num_layers = 0;
  // Lookahead (the paper's W, N, G; 0: the defaults 4, 4, 4): the Jacobi window's width W (its
  // columns are the n-grams being grown), the n-gram size N (3..8: the window holds N - 1
  // levels, and a draft is an n-gram's N - 1 tokens after its first), and how many n-grams the
  // pool keeps per first token, G (the most recent ones). The window costs W * (N - 1) - 1
  // extra rows per step.
  int32_t window_size = 0;
  int32_t ngram_size = 0;
  int32_t guess_set_size = 0;
  // Every method: how many candidate continuations are verified at once, merged into a token
  // tree (one forward pass; the accepted branch's K/V moved into place). 1: one chain.
  // Ngram's candidates follow the most recent match of each suffix length, lookahead's are the
  // pooled n-grams for the last token (up to guess_set_size), a draft model's (or layer skip's)
  // are its greedy chain plus, at each depth, its next num_candidates - 1 likeliest tokens.
  int32_t num_candidates = 1;
  // Adaptive (so speculation does not cost where it cannot pay): no sequence speculates in a
  // step that starts with more than this many running sequences (the batch already keeps the
  // machine busy); 0: no limit.
  int64_t disable_by_batch_size = 8;
  // A sequence whose recent drafts were accepted at less than this rate (an average over its
  // last few drafts), or whose speculating steps yield fewer tokens per second than plain
  // decoding would (the break-even, measured from the engine's step times), pauses speculating
  // for a while, then tries again (spec/acceptance_history.h); 0: never pauses.
  double min_acceptance_rate = 0.1;

  // Throws lumen::Error, one line naming the field, when a value is out of range (the Engine
  // checks it too; callers may check before loading a model).
  void validate() const;

  // vLLM's speculative_config JSON ({"method": "ngram", "num_speculative_tokens": 5, ...}), as
  // the CLI's --speculative-config flag and the Python package's speculative_config option take
  // it. Anything malformed (not JSON, not an object, an unknown key, a wrong type, a value out
  // of range, a method Lumen does not have) is a one-line lumen::Error that starts with `label`
  // (the flag or option's name).
  static SpeculativeConfig from_json(const std::string& json, std::string_view label = "speculative_config");
};

struct EngineConfig {
  int64_t max_num_seqs = 64;              // running at once
  int64_t max_num_batched_tokens = 512;   // tokens per step (decodes + prefill chunks)
  int32_t block_size = 16;                // tokens per KV block
  int64_t kv_cache_bytes = 0;             // 0: kv_cache_ram_fraction of the available RAM
  KvCacheDtype kv_cache_dtype = KvCacheDtype::F16;  // K and V's element type (block bytes follow it)
  // A quantized cache (q8_0, q4_0, fp8_e4m3) stores each head Hadamard-rotated, which spreads
  // outlier channels before rounding (docs/engine.md); false stores them as they are.
  bool kv_cache_rotation = true;
  // > 0: exactly this many KV blocks, whatever the byte budgets say (a single-user tool that
  // knows how many tokens it will hold: lumen run and chat).
  int64_t num_kv_blocks = 0;
  // > 0 (and num_kv_blocks 0): exactly room for this many sequences of max_model_len tokens,
  // whatever the byte budgets say. Sliding-window layers keep only their window, so this is
  // how a single-user tool asks for "this context" without knowing the model's layout.
  int64_t kv_cache_full_sequences = 0;
  // Sliding-window layers release the KV blocks that fell out of their window (false: keep
  // every position of every layer, as a cache without windows does).
  bool free_out_of_window_kv = true;
  ContextOverflow context_overflow = ContextOverflow::Finish;
  int64_t context_keep_tokens = 0;  // positions a shift keeps at the start (whole blocks)
  // StreamingLLM (> 0): a sequence keeps only its first context_keep_tokens positions (the
  // attention sinks) and its last kv_window_tokens, dropping the middle a block at a time, so it
  // generates past max_model_len in flat memory (implies shifting). Models with sliding-window
  // layers cannot shift unless free_out_of_window_kv is false.
  int64_t kv_window_tokens = 0;
  // Importance-based eviction (lumen/kv_eviction.h: SnapKV, H2O) for every request that does
  // not name its own (SamplingParams::kv_eviction). Not with a shift or StreamingLLM, nor with
  // speculative decoding, tensor or pipeline parallelism, a compressed KV cache type, or
  // sliding-window layers that keep only their window.
  KvImportance kv_importance = {};  // "= {}": designated initializers may leave it out (-Wextra)
  double kv_cache_ram_fraction = 0.25;
  // On a device backend (CUDA) without kv_cache_bytes: the share of the device memory still free
  // once the weights are loaded and the largest step has run (engine/largest_step_reserve.h)
  // that the KV cache takes.
  double gpu_memory_utilization = 0.9;
  // 0: the model's training context (capped by the pool); more than that context is refused.
  int64_t max_model_len = 0;
  bool enable_prefix_caching = true;
  SchedulingPolicy policy = SchedulingPolicy::Fcfs;
  double watermark = 0.01;                // share of blocks admission leaves free
  PreemptionMode preemption_mode = PreemptionMode::Recompute;
  int64_t swap_space_bytes = int64_t{256} << 20;  // host memory for swapped blocks (Swap mode)
  // A state-space model's state prefix cache: snapshots of a prompt's recurrent state where it
  // ends a full block, reused by later prompts with the same prefix. Refused for a model without
  // state-space layers or without prefix caching (a hit adopts the prefix's blocks too).
  // Each costs one sequence's whole state (EngineStats::state_cache_bytes / state_slots_total),
  // out of the cache memory budget. 0 (the default): off, since a snapshot per block costs far
  // more than the block's K/V and pays only where long prefixes repeat.
  int64_t state_prefix_cache_bytes = 0;
  // Engine::encode_image's visual-feature cache: encoded images kept by content hash, least
  // recently used out first, within this many bytes of features; 0: none kept.
  int64_t image_feature_cache_bytes = int64_t{64} << 20;
  SpeculativeConfig speculative = {};  // (= {}: designated initializers that leave it out stay warning-free)
  // Structured output's jump-forward: where a request's grammar forces the next text (a JSON
  // key, punctuation), its tokens go into the next step as a draft, so one forward pass
  // verifies them all instead of one pass per token. Verified like any draft, so the output is
  // exactly what decoding token by token gives (the model may still tokenize the forced text
  // its own way; the draft is then cut where it differs). Works with speculation off.
  bool jump_forward = true;
  // ITL-aware scheduling (> 0): while streams decode, each step is planned to take at most this
  // many milliseconds, as predicted by a cost model the engine fits from its own measured steps;
  // prefill chunks (and speculative drafts) shrink to fit beside the decodes, which are never
  // cut. 0: off (prefill chunks take what max_num_batched_tokens leaves). Greedy output does not
  // change either way, only which step computes what.
  double max_itl_ms = 0;
  // With max_itl_ms: prefill tokens a step with decodes computes even past the target, so a
  // prompt always progresses (a running prompt of L tokens is prefilled within
  // ceil(L / min_prefill_tokens) steps).
  int64_t min_prefill_tokens = 16;
  // Disaggregated prefill (lumen/prompt_kv.h): host memory for the K/V of computed prompts, kept
  // until a decode engine takes them (PromptKvExchange::take_prompt_kv); the oldest go first. 0: none kept.
  int64_t prompt_kv_store_bytes = 0;
};

}  // namespace lumen
