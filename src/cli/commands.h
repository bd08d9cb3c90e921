#pragma once
// Each `lumen` subcommand registers itself on the app and runs through a callback. A command
// signals failure by throwing lumen::Error; main() turns that into a one-line message and
// exit status 1.
#include <CLI/CLI.hpp>

namespace lumen::cli {

void add_inspect_command(CLI::App& app);
void add_synth_command(CLI::App& app);
void add_chat_template_command(CLI::App& app);  // chat-template render / list
void add_tokenize_commands(CLI::App& app);  // tokenize and detokenize
void add_embed_command(CLI::App& app);      // sentence embeddings as /v1/embeddings' JSON
void add_run_command(CLI::App& app);
void add_chat_command(CLI::App& app);
void add_serve_command(CLI::App& app);  // the OpenAI-compatible server
void add_bench_command(CLI::App& app);  // bench latency / throughput / serve
void add_perplexity_command(CLI::App& app);  // perplexity and KL divergence, as llama-perplexity
void add_imatrix_command(CLI::App& app);   // an importance matrix over a text, as llama-imatrix
void add_quantize_command(CLI::App& app);  // GGUF to GGUF in another type, as llama-quantize
void add_prune_command(CLI::App& app);  // a GGUF with only some of its layers
void add_pull_command(CLI::App& app);   // a catalog model into the cache
void add_list_command(CLI::App& app);   // the models in the cache
void add_kv_transfer_key_command(CLI::App& app);  // a deployment key for the KV-transfer port
void add_bench_latency_command(CLI::App* bench);
void add_bench_throughput_command(CLI::App* bench);
void add_bench_serve_command(CLI::App* bench);  // load generator for OpenAI-compatible servers
void add_bench_grammar_command(CLI::App* bench);  // structured output: compile and mask times
void add_bench_profile_command(CLI::App* bench);  // per-op roofline and thread timelines

}  // namespace lumen::cli
