#include "benchmark/stream_recorder.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

namespace lumen::benchmark {

namespace {

// The message of an OpenAI-shaped error ({"error": {"message": ...}} or {"error": "..."}),
// else the text itself, cut short.
std::string error_message(const std::string& body) {
  const nlohmann::json parsed = nlohmann::json::parse(body, nullptr, false);
  if (parsed.is_object() && parsed.contains("error")) {
    const nlohmann::json& error = parsed["error"];
    if (error.is_object() && error.contains("message") && error["message"].is_string()) {
      return error["message"].get<std::string>();
    }
    if (error.is_string()) return error.get<std::string>();
    return error.dump();
  }
  return body.size() > 200 ? body.substr(0, 200) + "..." : body;
}

// The generated text a chunk carries: `text` (completions) or `delta.content` (chat).
std::string_view chunk_text(const nlohmann::json& chunk) {
  auto choices = chunk.find("choices");
  if (choices == chunk.end() || !choices->is_array() || choices->empty()) return {};
  const nlohmann::json& choice = choices->front();
  if (!choice.is_object()) return {};
  if (auto text = choice.find("text"); text != choice.end() && text->is_string()) {
    return text->get_ref<const std::string&>();
  }
  if (auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
    if (auto content = delta->find("content"); content != delta->end() && content->is_string()) {
      return content->get_ref<const std::string&>();
    }
  }
  return {};
}

int64_t usage_count(const nlohmann::json& usage, const char* key) {
  auto it = usage.find(key);
  return it != usage.end() && it->is_number_integer() ? it->get<int64_t>() : -1;
}

}  // namespace

StreamRecorder::StreamRecorder() : parser_([this](std::string_view data) { on_event(data); }) {}

void StreamRecorder::on_bytes(std::string_view bytes, double now) {
  if (status_ != 200) {
    if (error_body_.size() < 4096) error_body_.append(bytes.substr(0, 4096 - error_body_.size()));
    return;
  }
  now_ = now;
  parser_.feed(bytes);
}

void StreamRecorder::on_event(std::string_view data) {
  if (done_ || !stream_error_.empty()) return;
  if (data == "[DONE]") {
    done_ = true;
    return;
  }
  const nlohmann::json chunk = nlohmann::json::parse(data, nullptr, false);
  if (!chunk.is_object()) {
    stream_error_ = fmt::format("a streamed chunk is not a JSON object: {}", data.substr(0, 200));
    return;
  }
  if (chunk.contains("error")) {
    stream_error_ = "error event: " + error_message(std::string(data));
    return;
  }
  if (!chunk_text(chunk).empty()) token_times_.push_back(now_);
  if (auto usage = chunk.find("usage"); usage != chunk.end() && usage->is_object()) {
    if (int64_t n = usage_count(*usage, "completion_tokens"); n >= 0) usage_completion_ = n;
    if (int64_t n = usage_count(*usage, "prompt_tokens"); n >= 0) usage_prompt_ = n;
  }
}

RequestResult StreamRecorder::finish(double now, const std::string& transport_error) {
  RequestResult r;
  r.e2el = now;
  if (status_ == 200) {
    now_ = now;
    parser_.finish();
  }
  if (status_ != 200 && status_ > 0) {
    r.error = fmt::format("HTTP {}: {}", status_, error_message(error_body_));
  } else if (!transport_error.empty()) {
    r.error = transport_error;
  } else if (status_ <= 0) {
    r.error = "no response";
  } else if (!stream_error_.empty()) {
    r.error = stream_error_;
  } else if (!done_) {
    r.error = "the stream ended before [DONE]";
  } else if (token_times_.empty()) {
    r.error = "the stream carried no generated text";
  }
  r.ok = r.error.empty();
  if (!token_times_.empty()) {
    r.ttft = token_times_.front();
    for (size_t i = 1; i < token_times_.size(); ++i) r.itl.push_back(token_times_[i] - token_times_[i - 1]);
  }
  r.text_chunks = static_cast<int64_t>(token_times_.size());
  r.usage_reported = usage_completion_ >= 0;
  r.output_tokens = r.usage_reported ? usage_completion_ : static_cast<int64_t>(token_times_.size());
  r.prompt_tokens = usage_prompt_;
  return r;
}

}  // namespace lumen::benchmark
