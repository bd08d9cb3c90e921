// `lumen serve`: the OpenAI-compatible HTTP server over one model. The engine runs on its own
// thread; each connection has an HTTP thread that submits and streams. SIGTERM or SIGINT stops
// it gracefully: no new requests, in-flight ones get the grace period, then exit status 0; a
// second signal during that exits at once (status 128 + the signal).
#include <fmt/format.h>
#include <signal.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "cli/device_option.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/engine_options.h"
#include "cli/model_parallel_flags.h"
#include "cli/serve_proxy.h"
#include "cli/serve_role_flags.h"
#include "cli/serve_until_stopped.h"
#include "cli/text_file.h"
#include "kv_transfer/kv_transfer_server.h"
#include "lumen/engine.h"
#include "lumen/model.h"
#include "lumen/prompt_kv_exchange.h"
#include "server/engine_loop.h"
#include "server/server.h"
#include "server/server_context.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ServeOptions {
  std::string model;
  std::string cors_origins;
  std::string allowed_hosts;
  std::string log_level = "info";
  std::string served_model_name;
  std::string chat_template;
  std::string chat_template_file;
  std::string reasoning_format = "auto";
  std::string max_body = "1M";
  int64_t max_pending = 1024;
  int64_t max_pending_per_client = 0;  // 0: half of max_pending
  int64_t max_output_records = server::ServingLimits{}.max_output_records;
  size_t max_chat_messages = 2048;
  int64_t max_embedding_inputs = server::ServingLimits{}.max_embedding_inputs;
  int64_t max_embedding_input_tokens = 0;
  int64_t max_embedding_request_tokens = server::ServingLimits{}.max_embedding_request_tokens;
  double request_read_timeout_s = 30.0;
  std::string mmproj;
  std::string max_image_bytes = "20M";
  size_t max_images_per_request = server::ImageLimits{}.max_images_per_request;
  std::string allowed_media_domains;
  bool no_web_ui = false;
  unsigned threads = 0;
  std::string device;
  ModelParallelFlags parallel;
  ServeRoleFlags role;
  server::ServerOptions http;
  EngineFlags engine;
};

// The flags `--role proxy` acts on. Any other one given with it is refused, never ignored: an
// ignored --api-key once left a proxy open to anyone while its operator believed it keyed.
constexpr std::array<std::string_view, 15> kProxyFlags = {"--role",
                                                          "--host",
                                                          "--port",
                                                          "--api-key",
                                                          "--metrics-public",
                                                          "--cors-origins",
                                                          "--allowed-hosts",
                                                          "--max-body-size",
                                                          "--http-threads",
                                                          "--max-queued-connections",
                                                          "--request-read-timeout",
                                                          "--shutdown-grace",
                                                          "--prefill",
                                                          "--decode",
                                                          "--upstream-timeout"};

void refuse_flags_the_proxy_ignores(const CLI::App& cmd) {
  for (const CLI::Option* option : cmd.get_options()) {
    if (option->count() == 0) continue;
    // The long name ("--threads" for -t); get_name() would be empty for a hidden option.
    const std::string name = !option->get_lnames().empty()   ? "--" + option->get_lnames().front()
                             : !option->get_snames().empty() ? "-" + option->get_snames().front()
                                                             : option->get_name(true);
    if (std::find(kProxyFlags.begin(), kProxyFlags.end(), name) == kProxyFlags.end()) {
      fail("{} does nothing with --role proxy (a proxy has no model or engine: give it to the instances)", name);
    }
  }
}

// `--role proxy`: no model, only the routing in front of prefill and decode instances, behind
// the same client-facing rules as any `lumen serve` (API keys, CORS, Host names, metrics).
int serve_as_proxy(const ServeOptions& options, const CLI::App& cmd) {
  refuse_flags_the_proxy_ignores(cmd);
  proxy::ProxyOptions p;
  p.host = options.http.host;
  p.port = options.http.port;
  p.prefill = options.role.prefill_urls;
  p.decode = options.role.decode_urls;
  p.max_body_bytes = static_cast<size_t>(EngineFlags::parse_bytes(options.max_body, "--max-body-size"));
  p.http_threads = options.http.http_threads;
  p.max_queued_connections = options.http.max_queued_connections;
  p.allowed_hosts = http::HostPolicy::parse_list(options.allowed_hosts);
  p.shutdown_grace_s = options.http.shutdown_grace_s;
  p.request_read_timeout_s = options.request_read_timeout_s;
  p.upstream_timeout_s = options.role.upstream_timeout_s;
  p.api_keys = options.http.api_keys;
  p.metrics_public = options.http.metrics_public;
  p.cors_origins = http::HostPolicy::parse_list(options.cors_origins);
  return serve_proxy(p);
}

void serve(ServeOptions& options, const CLI::App& cmd) {
  if (options.http.api_keys.empty()) {
    if (const char* key = std::getenv("LUMEN_API_KEY"); key != nullptr && *key != '\0') options.http.api_keys = {key};
  }
  if (options.role.is_proxy()) {
    if (const int status = serve_as_proxy(options, cmd); status != 0) std::exit(status);
    return;
  }
  const sigset_t stop_signals = block_stop_signals();  // before any thread starts

  options.http.max_body_bytes = static_cast<size_t>(EngineFlags::parse_bytes(options.max_body, "--max-body-size"));
  options.http.cors = http::CorsPolicy::parse(options.cors_origins);
  options.http.allowed_hosts = http::HostPolicy::parse_list(options.allowed_hosts);
  options.http.log_level = server::parse_log_level(options.log_level);
  options.http.web_ui = !options.no_web_ui;
  options.http.connection.read_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(options.request_read_timeout_s * 1000.0));

  const server::KvHandoffOptions handoff = options.role.handoff();
  if (handoff.role != server::ServeRole::Both &&
      (options.parallel.tensor > 1 || options.parallel.pipeline > 1 || options.parallel.expert > 1)) {
    fail(
        "--role {} does not combine with tensor, pipeline or expert parallelism (the K/V would be spread over "
        "processes)",
        options.role.role);
  }
  // A template file is held to 1 MiB: real ones are a few KiB.
  const std::string template_source = options.chat_template_file.empty()
                                          ? std::string()
                                          : read_text_file(options.chat_template_file, "chat template file", 1u << 20);
  const std::string path = resolve_model_path(options.model);
  const Model model = Model::load(path, sized_for(options.parallel.applied_to({.device = options.device,
                                                                               .threads = options.threads,
                                                                               .chat_template = options.chat_template,
                                                                               .chat_template_source = template_source,
                                                                               .mmproj = options.mmproj}),
                                                  options.engine.config));
  print_gpu_layers("serve", model.info());
  if (model.info().parallel_rank > 0) {  // rank 0 serves; this rank computes its share
    follow_model_parallel_leader(model);
    return;
  }
  if (!model.has_chat_template()) {
    fmt::print(stderr, "lumen serve: {}; /v1/chat/completions is off (choose one with --chat-template)\n",
               model.chat_template_problem());
  } else if (const std::string warning = base_model_chat_warning(path); !warning.empty()) {
    fmt::print(stderr, "lumen serve: warning: {}\n", warning);
  }
  EngineConfig engine_config = options.engine.resolve();
  options.role.apply_to(engine_config);
  Engine engine(model, engine_config);
  // A prefill instance answers decode instances' fetches of the K/V it keeps.
  std::unique_ptr<kv_transfer::KvTransferServer> kv_transfer;
  if (handoff.role == server::ServeRole::Prefill) {
    kv_transfer::KvTransferServerOptions transfer_options;
    transfer_options.key = handoff.key;
    transfer_options.max_fetch_tokens = static_cast<uint64_t>(engine.stats().max_model_len);
    kv_transfer = std::make_unique<kv_transfer::KvTransferServer>(
        handoff.advertised_endpoint,
        [exchange = PromptKvExchange(engine)](const kv_transfer::KvFetch& fetch) mutable -> std::optional<PromptKv> {
          if (fetch.format != exchange.kv_format()) {
            fail("the decode instance's K/V format differs from this prefill instance's: both need the same model "
                 "file and the same --kv-cache-dtype and --block-size");
          }
          return exchange.take_prompt_kv(fetch.request_id, fetch.tokens, fetch.cache_salt, fetch.n_known);
        },
        std::move(transfer_options));
    fmt::print(stderr, "lumen serve: prefill role, K/V for decode instances at {} ({})\n", kv_transfer->endpoint(),
               handoff.key ? "CURVE, deployment key" : "no authentication: loopback only");
  }
  const std::string name = options.served_model_name.empty() ? std::filesystem::path(path).stem().string()
                                                             : options.served_model_name;
  server::ServingLimits limits;
  limits.vocab_size = model.info().vocab_size;
  limits.max_model_len = engine.stats().max_model_len;
  limits.context_shift =
      engine_config.context_overflow == ContextOverflow::Shift || engine_config.kv_window_tokens > 0;
  limits.max_chat_messages = options.max_chat_messages;
  limits.max_output_records = options.max_output_records;
  limits.max_embedding_inputs = options.max_embedding_inputs;
  limits.max_embedding_input_tokens = options.max_embedding_input_tokens;
  limits.max_embedding_request_tokens = options.max_embedding_request_tokens;
  limits.images.max_image_bytes =
      static_cast<size_t>(EngineFlags::parse_bytes(options.max_image_bytes, "--max-image-bytes"));
  limits.images.max_images_per_request = options.max_images_per_request;
  limits.images.allowed_media_domains = server::parse_media_domains(options.allowed_media_domains);
  // A rendering may add template text around the body's messages, but not grow without bound.
  limits.max_rendered_prompt_bytes = 4 * options.http.max_body_bytes;
  server::ServerContext context(engine, model, name, limits,
                                options.max_pending, options.max_pending_per_client);
  context.salt_by_api_key = !options.http.api_keys.empty();
  context.split_reasoning = options.reasoning_format != "none";
  context.kv_handoff = handoff;
  // The bound address, with the real port when any was asked for ("tcp://127.0.0.1:*").
  if (kv_transfer) context.kv_handoff.advertised_endpoint = kv_transfer->endpoint();
  server::EngineLoop loop(engine);
  server::Server http(context, options.http);
  const int port = http.bind();
  fmt::print(stderr, "lumen serve: {} on http://{}:{} (context {} tokens, {} KV blocks)\n", name,
             options.http.host, port, limits.max_model_len, engine.stats().kv_blocks_total);
  if (options.http.web_ui) fmt::print(stderr, "lumen serve: chat page at http://{}:{}/\n", options.http.host, port);
  if (!model.info().vision_tower.empty()) {
    fmt::print(stderr, "lumen serve: images encoded on {}\n", model.info().vision_tower);
  }
  std::fflush(stderr);

  serve_until_stopped(stop_signals, options.http.shutdown_grace_s, [&http] { http.serve(); },
                      [&http] { http.shutdown(); });
  loop.stop();
  fmt::print(stderr, "lumen serve: stopped\n");
}

}  // namespace

void add_serve_command(CLI::App& app) {
  auto options = std::make_shared<ServeOptions>();
  CLI::App* cmd = app.add_subcommand("serve", "OpenAI-compatible HTTP server (/v1/completions, /v1/chat/completions...)");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("--host", options->http.host, "Address to listen on")->capture_default_str();
  cmd->add_option("--port", options->http.port, "Port (0: any free port)")->capture_default_str()->check(CLI::Range(0, 65535));
  cmd->add_option("--api-key", options->http.api_keys,
                  "Require 'Authorization: Bearer KEY' (or set LUMEN_API_KEY); repeat for several tenants, whose "
                  "prompts are then never shared through the prefix cache");
  cmd->add_option("--served-model-name", options->served_model_name, "Model name clients use (default: the file's name)");
  auto* builtin_template =
      cmd->add_option("--chat-template", options->chat_template, "Built-in chat template instead of the model's");
  cmd->add_option("--chat-template-file", options->chat_template_file,
                  "A Jinja chat template file instead of the model's template")
      ->excludes(builtin_template);
  cmd->add_option("--reasoning-format", options->reasoning_format,
                  "A reasoning model's <think> block: auto (message.reasoning_content) or none (left in content); a "
                  "request's reasoning_format overrides it")
      ->check(CLI::IsMember({"auto", "deepseek", "none"}))
      ->capture_default_str();
  cmd->add_option("--max-body-size", options->max_body, "Largest request body, e.g. 1M")->capture_default_str();
  cmd->add_option("--max-pending-requests", options->max_pending,
                  "Requests (counted per choice) queued or running before new ones get 429")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-queued-requests-per-client", options->max_pending_per_client,
                  "Of those, how many one client (API key, or address without keys) may hold; more get 429 "
                  "(default: half of --max-pending-requests)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-output-records", options->max_output_records,
                  "Most tokens and log-probability entries one response may hold (prompts x choices x "
                  "echo/logprobs x length); larger requests get 400")
      ->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--max-embedding-inputs", options->max_embedding_inputs, "Most inputs in one /v1/embeddings request")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--max-embedding-input-tokens", options->max_embedding_input_tokens,
                  "Most tokens in one /v1/embeddings input (default: the context, --max-model-len)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-embedding-request-tokens", options->max_embedding_request_tokens,
                  "Most tokens of all inputs together in one /v1/embeddings request")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--max-chat-messages", options->max_chat_messages, "Most messages in one chat request")
      ->capture_default_str()->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--mmproj", options->mmproj,
                  "A vision-language model's projector file (llama.cpp's mmproj GGUF) for images in chat");
  cmd->add_option("--max-image-bytes", options->max_image_bytes, "Largest image file in a request, e.g. 20M")
      ->capture_default_str();
  cmd->add_option("--max-images-per-request", options->max_images_per_request, "Most images in one chat request")
      ->capture_default_str()
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--allowed-media-domains", options->allowed_media_domains,
                  "Domains image URLs may be fetched from, comma-separated (default: none; send data: URLs)");
  cmd->add_option("--http-threads", options->http.http_threads,
                  "Connections served at once (a streaming client, or one still sending its request, holds one)")
      ->capture_default_str()->check(CLI::Range(4, 65536));
  cmd->add_option("--max-queued-connections", options->http.max_queued_connections,
                  "Connections that may wait for a free thread; past them new connections get 503")
      ->capture_default_str()->check(CLI::Range(0, 65536));
  cmd->add_option("--request-read-timeout", options->request_read_timeout_s,
                  "Seconds a client has to send a request's head and body (408 after)")
      ->capture_default_str()->check(CLI::Range(0.1, 3600.0));
  cmd->add_option("--shutdown-grace", options->http.shutdown_grace_s,
                  "Seconds in-flight requests get to finish after SIGTERM")->capture_default_str()->check(CLI::Range(0.0, 3600.0));
  cmd->add_option("-t,--threads", options->threads, "Compute threads (default: all cores)");
  cmd->add_flag("--metrics-public", options->http.metrics_public, "Serve /metrics without the API key");
  cmd->add_flag("--no-web-ui", options->no_web_ui,
                "Do not serve the chat page at / (the API is unchanged)");
  cmd->add_option("--cors-origins", options->cors_origins,
                  "Browser origins allowed to call the API, comma-separated, or * for any (default: none)");
  cmd->add_option("--allowed-hosts", options->allowed_hosts,
                  "Host names the server answers, comma-separated, or * (default: loopback names when bound to "
                  "a loopback address, any otherwise); others get 421");
  cmd->add_option("--log-level", options->log_level,
                  "quiet (only server errors), info (a line per request) or verbose (with body size, user agent)")
      ->capture_default_str();
  add_device_option(cmd, options->device);
  add_model_parallel_options(cmd, options->parallel);
  options->role.add_to(cmd);
  options->engine.add_to(cmd);
  cmd->callback([options, cmd] { serve(*options, *cmd); });
}

}  // namespace lumen::cli
