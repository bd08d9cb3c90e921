// A client's handle on one completion of a request: its stream of chunks, read as they come or
// collected into one result.
#include "engine/request_stream.h"
#include "lumen/engine.h"

namespace lumen {

RequestHandle::RequestHandle(uint64_t id, int32_t index, std::shared_ptr<RequestStream> stream)
    : id_(id), index_(index), stream_(std::move(stream)) {}

bool RequestHandle::next(StreamChunk& out) { return stream_->next(out); }

bool RequestHandle::try_next(StreamChunk& out) { return stream_->try_next(out); }

GenerationResult RequestHandle::collect() {
  GenerationResult result;
  result.request_id = id_;
  result.index = index_;
  StreamChunk chunk;
  while (next(chunk)) {
    if (!chunk.prompt_logprobs.empty()) result.prompt_logprobs = std::move(chunk.prompt_logprobs);
    for (const GeneratedToken& t : chunk.tokens) {
      result.text += t.text;
      result.tokens.push_back(t.token);
      result.logprobs.push_back(t.logprob);
      result.top_logprobs.push_back(t.top);
    }
    if (chunk.finished) {
      result.finish = chunk.finish_reason;
      result.error = chunk.error;
    }
  }
  return result;
}

}  // namespace lumen
