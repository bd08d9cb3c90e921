// `lumen`: the command-line entry point. Subcommands live in cmd_*.cc, one per file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <new>

#include "cli/commands.h"
#include "cli/option_suggestion.h"
#include "cli/version.h"
#include "util/error.h"

int main(int argc, char** argv) {
  CLI::App app{"Lumen: LLM inference engine for GGUF models"};
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", lumen::cli::version_text());
  bool help_asked = false;
  app.add_subcommand("help", "Print this help")->callback([&] { help_asked = true; });
  lumen::cli::add_inspect_command(app);
  lumen::cli::add_synth_command(app);
  lumen::cli::add_chat_template_command(app);
  lumen::cli::add_tokenize_commands(app);
  lumen::cli::add_embed_command(app);
  lumen::cli::add_run_command(app);
  lumen::cli::add_chat_command(app);
  lumen::cli::add_serve_command(app);
  lumen::cli::add_bench_command(app);
  lumen::cli::add_perplexity_command(app);
  lumen::cli::add_imatrix_command(app);
  lumen::cli::add_quantize_command(app);
  lumen::cli::add_prune_command(app);
  lumen::cli::add_pull_command(app);
  lumen::cli::add_list_command(app);
  lumen::cli::add_kv_transfer_key_command(app);
  // Every failure is a one-line message and a small exit status, never a signal or a trace.
  try {
    app.parse(argc, argv);
    if (help_asked || app.get_subcommands().empty()) {
      // `lumen help` asked for it (0); a bare `lumen` did not say what to do (2).
      fmt::print(help_asked ? stdout : stderr, "{}", app.get_formatter()->make_help(&app, "lumen", CLI::AppFormatMode::Normal));
      return help_asked ? 0 : 2;
    }
  } catch (const CLI::ExtrasError& e) {
    const int status = app.exit(e);
    fmt::print(stderr, "{}", lumen::cli::suggest_options(app, app.remaining(true)));
    return status;
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const lumen::Error& e) {
    fmt::print(stderr, "lumen: error: {}\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    fmt::print(stderr, "lumen: error: out of memory\n");
    return 1;
  } catch (const std::exception& e) {
    fmt::print(stderr, "lumen: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
