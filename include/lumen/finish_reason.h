#pragma once
// Why a completion ended.
namespace lumen {

enum class FinishReason {
  Stop,    // a stop token id, an end-of-generation token or a stop string
  Length,  // max_tokens, or the context (or the KV cache) is full
  Abort,   // aborted by the caller, or the engine shut down
  Error,   // the engine failed on this request (an exception in its step, non-finite logits) and
           // went on serving the others; the last chunk's `error` says how (for logs, not clients)
};

// "stop", "length", "abort", "error": OpenAI's finish_reason words where it has them.
const char* finish_reason_name(FinishReason reason);

}  // namespace lumen
