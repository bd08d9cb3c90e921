// POST /v1/completions and /v1/chat/completions: parse, submit through a Generation, then either
// collect every choice into one body or stream them as server-sent events.
#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "http/guarded_http_server.h"
#include "http/http_policy.h"
#include "lumen/cache_salt.h"
#include "server/access_log.h"
#include "server/api_error.h"
#include "server/chat_images.h"
#include "server/chat_request.h"
#include "server/client_id.h"
#include "server/completion_request.h"
#include "server/generation.h"
#include "server/json_body.h"
#include "server/kv_handoff.h"
#include "server/openai_responses.h"
#include "server/output_budget.h"
#include "server/request_field_names.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/reply_split.h"
#include "server/request_fields.h"
#include "server/structured_request.h"
#include "server/tool_reply_stream.h"

namespace lumen::server {

namespace {

// What one generation request asks for, whichever endpoint it came through.
struct GenerationJob {
  Endpoint endpoint;
  std::vector<std::vector<int32_t>> prompts;
  std::vector<std::string> echo_texts;  // per prompt, put before its choices' text; empty: none
  GenerationOptions options;
  // Chat with tools that may be called: each reply's calls are parsed out of its text.
  std::optional<ToolRequest> tools;
  ToolCallFormat tool_format = ToolCallFormat::Generic;
  // Chat with a reasoning model: each reply split into reasoning_content and content
  // (server/reasoning_split.h), starting inside the block when the prompt opened it.
  bool split_reasoning = false;
  ReasoningSyntax reasoning_syntax = ReasoningSyntax::ThinkTags;  // harmony: gpt-oss's channels
  bool starts_in_reasoning = false;
  bool drop_reasoning = false;  // vLLM's include_reasoning: false
};

std::vector<int64_t> prompt_lengths(const std::vector<std::vector<int32_t>>& prompts) {
  std::vector<int64_t> lengths;
  for (const auto& prompt : prompts) lengths.push_back(static_cast<int64_t>(prompt.size()));
  return lengths;
}

ApiError aborted_error(const ServerContext& context) {
  if (context.shutdown_aborted || context.admission.draining()) {
    return ApiError(503, "the server is shutting down; the request was aborted", "", "server_shutting_down");
  }
  return ApiError(503, "the request was aborted", "", "aborted");
}

// The engine failed on a choice (FinishReason::Error): the client learns only that it was our
// fault, with the request id; the access log line gets what failed. Except for a grammar whose
// masks cost more than their budget (grammar/mask_work.h): that is the client's grammar, a 400
// (or the stream's error event) that says so and names the field.
ApiError engine_fault(const std::string& request_id, const std::string& detail, const std::string& structured_field) {
  this_request_note().error_detail = "engine: " + detail;
  if (const size_t at = detail.find("grammar budget exceeded"); at != std::string::npos) {
    return ApiError(400, detail.substr(at), structured_field, "grammar_budget_exceeded");
  }
  return ApiError(500, fmt::format("internal server error (request id {})", request_id), "", "internal_error");
}

// For the access log line (access_log.h): the tokens this request took.
void note_usage(const Generation& generation) {
  RequestNote& note = this_request_note();
  note.prompt_tokens = generation.prompt_tokens();
  note.completion_tokens = generation.completion_tokens();
}

void respond_whole(ServerContext& context, Generation& generation, const GenerationJob& job,
                   httplib::Response& response) {
  const size_t n = generation.n_choices();
  std::vector<ChoiceOutput> outputs(n);
  std::vector<std::vector<GeneratedToken>> tokens(n);
  std::vector<std::vector<PromptLogprob>> prompt_logprobs(n);
  const bool logprobs = job.options.params.logprobs.has_value();
  const bool echo_logprobs = logprobs && !job.echo_texts.empty();
  for (size_t i = 0; i < n; ++i) {
    outputs[i].index = static_cast<int64_t>(i);
    if (!job.echo_texts.empty()) outputs[i].text = job.echo_texts[generation.prompt_of(i)];
  }
  size_t i = 0;
  StreamChunk chunk;
  bool aborted = false;
  std::string fault;
  while (generation.next(i, chunk)) {
    if (!chunk.prompt_logprobs.empty()) prompt_logprobs[i] = std::move(chunk.prompt_logprobs);
    for (GeneratedToken& t : chunk.tokens) {
      outputs[i].text += t.text;
      if (logprobs) tokens[i].push_back(std::move(t));
    }
    if (chunk.finished) {
      outputs[i].finish = chunk.finish_reason;
      aborted = aborted || chunk.finish_reason == FinishReason::Abort;
      if (chunk.finish_reason == FinishReason::Error && fault.empty()) fault = chunk.error;
    }
  }
  if (!fault.empty())
    throw engine_fault(response.get_header_value("X-Request-Id"), fault, job.options.structured_field);
  if (aborted) throw aborted_error(context);
  if (job.split_reasoning) {
    for (ChoiceOutput& output : outputs) {
      ReplySplit split(job.reasoning_syntax, job.starts_in_reasoning);
      ReasoningDelta whole = split.add(output.text);
      ReasoningDelta rest = split.finish();
      output.reasoning = job.drop_reasoning ? "" : whole.reasoning + rest.reasoning;
      output.text = whole.content + rest.content;
    }
  }
  if (job.tools) {
    for (ChoiceOutput& output : outputs) {
      ToolReply reply = parse_tool_reply(job.tool_format, output.text, *job.tools);
      output.text = std::move(reply.content);
      output.tool_calls = std::move(reply.calls);
    }
  }
  for (size_t c = 0; c < n; ++c) {
    if (job.options.prompt_logprobs_field) {
      outputs[c].prompt_logprobs = prompt_logprobs_json(context.model, prompt_logprobs[c]);
    }
    if (!logprobs) continue;
    LogprobWriter writer(context.model, job.endpoint);
    if (echo_logprobs) {
      nlohmann::json prompt = writer.write_prompt(prompt_logprobs[c]);
      outputs[c].logprobs = concat_logprob_lists(std::move(prompt), writer.write(tokens[c]));
    } else {
      outputs[c].logprobs = writer.write(tokens[c]);
    }
  }
  const ResponseHeader header = make_response_header(job.endpoint, context.model_name);
  const Usage usage{generation.prompt_tokens(), generation.completion_tokens()};
  note_usage(generation);
  response.set_content(dump_json(whole_response(header, outputs, usage)), "application/json");
}

// The streamed response outlives the handler: httplib calls the provider after it returns.
// The releaser drops the generation as soon as the response is over (or the client is gone),
// which aborts whatever is unfinished and stops watching the socket before httplib closes it.
struct StreamState {
  std::unique_ptr<Generation> generation;
  GenerationJob job;
  ResponseHeader header;
  std::string request_id;  // X-Request-Id, for an error event
};

// One chunk of a chat reply that may call tools (ToolReplyStream): its releasable content,
// and at the end the held rest, the calls and the finish reason.
template <typename Write>
bool stream_tool_reply(const StreamState& state, ToolReplyStream& reply, size_t choice, const std::string& text,
                       nlohmann::json logprobs, const StreamChunk& chunk, bool usage, Write&& write) {
  const auto index = static_cast<int64_t>(choice);
  std::string content = reply.add(text);
  if (!content.empty() || !logprobs.is_null()) {
    if (!write(sse_event(stream_chunk(state.header, index, content, false, std::move(logprobs), nullptr, usage)))) {
      return false;
    }
  }
  if (!chunk.finished) return true;
  const ToolReply rest = reply.finish();
  if (!rest.content.empty() &&
      !write(sse_event(stream_chunk(state.header, index, rest.content, false, nullptr, nullptr, usage)))) {
    return false;
  }
  if (!rest.calls.empty() && !write(sse_event(tool_calls_chunk(state.header, index, rest.calls, usage)))) return false;
  nlohmann::json last = stream_chunk(state.header, index, "", false, nullptr, &chunk.finish_reason, usage);
  last["choices"][0]["finish_reason"] = finish_reason_for(chunk.finish_reason, !rest.calls.empty());
  return write(sse_event(last));
}

bool stream_events(ServerContext& context, StreamState& state, httplib::DataSink& sink) {
  Generation& generation = *state.generation;
  const GenerationJob& job = state.job;
  const bool usage = job.options.include_usage;
  const bool logprobs = job.options.params.logprobs.has_value();
  auto write = [&](const std::string& text) { return sink.write(text.data(), text.size()); };
  const size_t n = generation.n_choices();
  std::vector<LogprobWriter> writers(n, LogprobWriter(context.model, job.endpoint));
  bool ok = true;
  // Chat opens each choice with the assistant role; echo opens each completion with its prompt.
  for (size_t i = 0; i < n && ok; ++i) {
    if (job.endpoint == Endpoint::ChatCompletions) {
      ok = write(sse_event(stream_chunk(state.header, static_cast<int64_t>(i), "", true, nullptr, nullptr, usage)));
    } else if (!job.echo_texts.empty()) {
      ok = write(sse_event(stream_chunk(state.header, static_cast<int64_t>(i), job.echo_texts[generation.prompt_of(i)],
                                        true, nullptr, nullptr, usage)));
    }
  }
  std::vector<ToolReplyStream> tool_streams;
  if (job.tools) tool_streams.assign(n, ToolReplyStream(job.tool_format, *job.tools));
  std::vector<ReplySplit> reasoning_splits;
  if (job.split_reasoning) reasoning_splits.assign(n, ReplySplit(job.reasoning_syntax, job.starts_in_reasoning));
  size_t i = 0;
  StreamChunk chunk;
  bool aborted = false;
  std::string fault;
  while (ok && generation.next(i, chunk)) {
    // The choice ends with finish_reason "error"; an error event follows at the end.
    if (chunk.finished && chunk.finish_reason == FinishReason::Error && fault.empty()) fault = chunk.error;
    if (chunk.finished && chunk.finish_reason == FinishReason::Abort) {
      aborted = true;
      continue;
    }
    std::string text;
    for (const GeneratedToken& t : chunk.tokens) text += t.text;
    nlohmann::json lp = logprobs && !chunk.tokens.empty() ? writers[i].write(chunk.tokens) : nlohmann::json();
    if (job.split_reasoning) {  // the reasoning goes out now; the content on as any reply's
      ReasoningDelta delta = reasoning_splits[i].add(text);
      if (chunk.finished) {
        ReasoningDelta rest = reasoning_splits[i].finish();
        delta.reasoning += rest.reasoning;
        delta.content += rest.content;
      }
      if (!delta.reasoning.empty() && !job.drop_reasoning &&
          !write(sse_event(reasoning_chunk(state.header, static_cast<int64_t>(i), delta.reasoning, usage)))) {
        ok = false;
        continue;
      }
      text = std::move(delta.content);
    }
    if (job.tools) {
      ok = stream_tool_reply(state, tool_streams[i], i, text, std::move(lp), chunk, usage, write);
      continue;
    }
    // A token whose text is held back (half a character, a possible stop string) sends nothing
    // unless its log-probability was asked for.
    if (text.empty() && lp.is_null() && !chunk.finished) continue;
    ok = write(sse_event(stream_chunk(state.header, static_cast<int64_t>(i), text, false, std::move(lp),
                                      chunk.finished ? &chunk.finish_reason : nullptr, usage)));
  }
  if (!ok) {
    generation.abort_all();  // the client is gone
    return false;
  }
  if (!fault.empty()) {
    ok = write(sse_event(engine_fault(state.request_id, fault, job.options.structured_field).to_json()));
  } else if (aborted) {
    // A failure mid-stream: an error event, then the end, as OpenAI's clients expect.
    ok = write(sse_event(aborted_error(context).to_json()));
  } else if (usage) {
    ok = write(sse_event(usage_chunk(state.header, Usage{generation.prompt_tokens(), generation.completion_tokens()})));
  }
  ok = ok && write(kSseDone);
  if (ok) sink.done();
  return ok;
}

void respond_stream(ServerContext& context, std::unique_ptr<Generation> generation, GenerationJob job,
                    httplib::Response& response) {
  auto state = std::make_shared<StreamState>();
  state->generation = std::move(generation);
  state->header = make_response_header(job.endpoint, context.model_name);
  state->request_id = response.get_header_value("X-Request-Id");
  state->job = std::move(job);
  response.set_header("Cache-Control", "no-cache");
  response.set_chunked_content_provider(
      "text/event-stream",
      [&context, state](size_t, httplib::DataSink& sink) {
        try {
          return stream_events(context, *state, sink);
        } catch (const std::exception& e) {
          if (state->generation) state->generation->abort_all();
          const std::string event = sse_event(ApiError(500, e.what()).to_json()) + kSseDone;
          sink.write(event.data(), event.size());
          sink.done();
          return true;
        }
      },
      [state](bool) {
        if (state->generation) note_usage(*state->generation);
        state->generation.reset();
      });
}

// Takes the request's admission places: one per sequence (best_of and beam search run more
// than the n they return), charged to its client (client_id.h). A request that needs more
// than one client's share is a 400, not a 429: waiting would never make it fit.
Admission::Places admit(ServerContext& context, const httplib::Request& request, size_t n_prompts,
                        const GenerationOptions& options) {
  const auto width = static_cast<int64_t>(std::max(options.n, options.params.best_of.value_or(options.n)));
  const auto prompts = static_cast<int64_t>(n_prompts);
  const int64_t places = prompts * width;
  if (places > context.admission.max_per_client()) {
    const char* param = prompts > 1 && prompts >= width ? "prompt" : (width > options.n ? "best_of" : "n");
    invalid(param,
            "this request runs {} sequences ({} prompts x {} choices); one client may have at most {} queued or "
            "running (--max-queued-requests-per-client)",
            places, prompts, width, context.admission.max_per_client());
  }
  return context.admission.reserve(
      client_id(context.salt_by_api_key, request.get_header_value("Authorization"), request.remote_addr), places);
}

void run_job(ServerContext& context, GenerationJob job, Admission::Places places, Clock::time_point arrival,
             const httplib::Request& request, httplib::Response& response) {
  if (context.salt_by_api_key) {
    // The key was checked before routing; its salt keeps this tenant's cached prompts its own.
    if (auto token = http::bearer_token(request.get_header_value("Authorization"))) {
      job.options.cache_salt = combine_cache_salts(job.options.cache_salt, cache_salt_of(*token));
    }
  }
  const KvHandoffOptions& handoff = context.kv_handoff;
  if (handoff.role == ServeRole::Prefill) {
    // Only the prompt is computed here; the decode instance generates (server/kv_handoff.h).
    job.options = prompt_only(job.options);
    job.tools.reset();
    job.echo_texts.clear();
  } else if (handoff.role == ServeRole::Decode && job.prompts.size() == 1 && request.has_header(kKvTransferHeader)) {
    if (auto source = parse_kv_transfer_header(handoff, request.get_header_value(kKvTransferHeader))) {
      job.options.cache_salt = receive_prompt_kv(context, *source, job.prompts.front(), job.options.cache_salt);
    }
  }
  auto generation = std::make_unique<Generation>(context, job.prompts, job.options, job.endpoint, arrival,
                                                 http::GuardedHttpServer::current_socket(), std::move(places));
  if (handoff.role == ServeRole::Prefill && generation->n_choices() == 1) {
    response.set_header(kKvTransferHeader, kv_transfer_header(handoff, generation->request_id(0)));
  }
  if (job.options.stream) {
    respond_stream(context, std::move(generation), std::move(job), response);
  } else {
    respond_whole(context, *generation, job, response);
  }
}

}  // namespace

nlohmann::json parse_request_body(const httplib::Request& request, JsonEndpoint endpoint, httplib::Response& response) {
  nlohmann::json body = parse_json_body(request.body);
  const std::vector<std::string> ignored = check_field_names(body, endpoint);
  if (!ignored.empty()) response.set_header(kIgnoredFieldsHeader, ignored_fields_header(ignored));
  return body;
}

void check_model(const ServerContext& context, const nlohmann::json& body) {
  auto it = body.find("model");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_string()) invalid("model", "'model' must be a string");
  if (it->get<std::string>() != context.model_name) {
    // OpenAI's answer for an unknown model: 404 model_not_found.
    throw ApiError(404, fmt::format("the model '{}' does not exist; this server serves '{}'",
                                    it->get<std::string>(), context.model_name),
                   "model", "model_not_found");
  }
}

void handle_completions(ServerContext& context, const httplib::Request& request, httplib::Response& response) {
  const Clock::time_point arrival = Clock::now();
  const nlohmann::json body = parse_request_body(request, JsonEndpoint::Completions, response);
  check_model(context, body);
  CompletionRequest parsed = parse_completion_request(body, context.model, context.limits);
  if (parsed.options.params.structured_outputs) {
    restore_schema_order(nlohmann::ordered_json::parse(request.body), parsed.options.structured_field,
                         *parsed.options.params.structured_outputs);
  }
  check_output_budget(estimate_output(prompt_lengths(parsed.prompts), parsed.options, Endpoint::Completions,
                                      parsed.echo, context.limits.max_model_len),
                      context.limits.max_output_records);
  Admission::Places places = admit(context, request, parsed.prompts.size(), parsed.options);
  GenerationJob job{Endpoint::Completions, std::move(parsed.prompts), {}, parsed.options, std::nullopt,
                    ToolCallFormat::Generic};
  if (parsed.echo) job.echo_texts = std::move(parsed.prompt_texts);
  run_job(context, std::move(job), std::move(places), arrival, request, response);
}

// Whether a chat reply is split into reasoning_content and content: the request's
// reasoning_format ("auto" or llama-server's "deepseek": split; "none": the raw text), else the
// server's --reasoning-format, and only for a template that writes reasoning blocks. vLLM's
// include_reasoning: false keeps the split and drops the reasoning.
void choose_reasoning_split(const ServerContext& context, const nlohmann::json& body, std::span<const int32_t> prompt,
                            GenerationJob& job) {
  bool split = context.split_reasoning;
  const RequestFields fields(body);
  job.drop_reasoning = !fields.boolean("include_reasoning").value_or(true);
  if (std::optional<std::string> format = fields.string("reasoning_format")) {
    if (*format != "auto" && *format != "deepseek" && *format != "none") {
      invalid("reasoning_format", "reasoning_format must be \"auto\", \"deepseek\" or \"none\"");
    }
    split = *format != "none";
  }
  const std::string_view source = context.model.chat_template_source();
  if (template_is_harmony(source)) {
    // gpt-oss: the reply's channel markers are control tokens, which the split reads (and
    // "none" returns raw, as llama-server does).
    job.options.params.skip_special_tokens = false;
    job.options.params.stop_token_text = false;  // <|return|> / <|call|> end the reply, not its text
    job.split_reasoning = split;
    job.reasoning_syntax = ReasoningSyntax::Harmony;
    return;
  }
  job.split_reasoning = split && template_has_reasoning(source);
  if (!job.split_reasoning) return;
  // The prompt's last tokens say whether the template opened the block (DeepSeek-R1's "<think>\n").
  const size_t tail = std::min<size_t>(prompt.size(), 16);
  job.starts_in_reasoning = prompt_opens_reasoning(context.model.detokenize(prompt.subspan(prompt.size() - tail)));
}

void handle_chat_completions(ServerContext& context, const httplib::Request& request, httplib::Response& response) {
  const Clock::time_point arrival = Clock::now();
  const nlohmann::json body = parse_request_body(request, JsonEndpoint::ChatCompletions, response);
  check_model(context, body);
  if (!context.model.has_chat_template()) {
    throw ApiError(400, "the served model has no chat template; use /v1/completions", "messages");
  }
  ChatRequest parsed = read_chat_request(body, context.limits);
  check_images_servable(context.model, parsed.images);
  if (!parsed.images.empty() && context.kv_handoff.role != ServeRole::Both) {
    // The K/V handed over is keyed by tokens alone, and the decode side would need the images.
    invalid("messages", "images are not supported with disaggregated prefill and decode (--role) yet");
  }
  if (parsed.options.max_tokens_given) {
    // The generated part is known without the prompt (as an empty one): a request already
    // over the budget on it is refused before it takes places or renders.
    check_output_budget(estimate_output({0}, parsed.options, Endpoint::ChatCompletions, false,
                                        context.limits.max_model_len),
                        context.limits.max_output_records);
  }
  // The template runs only once the request holds its places. Rendering costs up to the
  // interpreter's step limit, so a flood of chat requests must not render on every HTTP thread
  // at once: under admission it is bounded by the places, each client by its share (one
  // client's flood cannot delay another's renders, as a shared render semaphore would), and a
  // request refused with 429 costs no rendering at all. Any 400 from here on gives the places
  // back as `places` unwinds.
  Admission::Places places = admit(context, request, 1, parsed.options);
  restore_declared_order(request.body, parsed);
  prepare_tool_calling(parsed, context.model);
  parsed.prompt = render_chat_prompt(parsed.messages, body, context.model, context.limits.max_rendered_prompt_bytes,
                                     parsed.template_tools);
  if (!parsed.images.empty()) {
    const ImageFetchLimits fetch{context.limits.images.max_image_bytes, context.limits.images.fetch_timeout};
    parsed.options.images = place_chat_images(context.engine, context.model, parsed.images, fetch, parsed.prompt);
  }
  // The whole count needs the prompt's length, known only now; the places go back if it refuses.
  check_output_budget(estimate_output(prompt_lengths({parsed.prompt}), parsed.options, Endpoint::ChatCompletions,
                                      false, context.limits.max_model_len),
                      context.limits.max_output_records);
  GenerationJob job{Endpoint::ChatCompletions, {std::move(parsed.prompt)}, {}, parsed.options, std::nullopt,
                    ToolCallFormat::Generic};
  choose_reasoning_split(context, body, job.prompts.front(), job);
  if (parsed.tools && parsed.tool_reply_parsed) {
    job.tools = std::move(parsed.tools);
    job.tool_format = parsed.tool_format;
  }
  run_job(context, std::move(job), std::move(places), arrival, request, response);
}

}  // namespace lumen::server
