// `lumen`: the command-line entry point. Subcommands live in cmd_*.cc, one per file.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/llama_cpp_spellings.h"
#include "cli/mpi_launch.h"
#include "cli/option_suggestion.h"
#include "cli/version.h"
#include "util/error.h"

namespace {

// Under mpirun every rank meets the same command-line and model errors (a bad flag, a missing
// file): rank 0 reports them at once; any other rank holds its report back a moment. When rank 0
// failed too, mpirun ends the whole job on rank 0's exit, before the duplicate is printed; when
// the failure is this rank's own (a port in use, a file missing on its machine), rank 0 is still
// running and this report is the only one, so it is printed, naming the rank.
//
// A rank that failed then leaves at once (_Exit): returning from main would run MPI_Finalize
// (the model-parallel group's static destructor), which waits for every rank, and the ranks
// would wait on each other instead of letting mpirun see the failure and end the job.
void report_error(const lumen::cli::LaunchRank& launch, const char* message) {
  if (launch.size < 2) {
    fmt::print(stderr, "lumen: error: {}\n", message);
    return;
  }
  if (launch.rank == 0) {
    fmt::print(stderr, "lumen: error: {}\n", message);
  } else {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    fmt::print(stderr, "lumen: error (rank {} of {}): {}\n", launch.rank, launch.size, message);
  }
  std::fflush(nullptr);
  std::_Exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  const lumen::cli::LaunchRank launch = lumen::cli::launch_rank_from_environment();
  const std::string launch_warning =
      lumen::cli::unspread_launch_warning(launch, std::vector<std::string>(argv + 1, argv + argc));
  if (!launch_warning.empty()) fmt::print(stderr, "{}", launch_warning);
  // The command line's mistakes (and --help) are the same on every rank: rank 0 prints them.
  const bool launch_leader = launch.rank == 0;
  std::ostringstream discarded;
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
    std::vector<std::string> args = lumen::cli::with_llama_cpp_spellings(argc, argv);
    std::vector<char*> arg_pointers;
    for (std::string& arg : args) arg_pointers.push_back(arg.data());
    app.parse(argc, arg_pointers.data());
    if (help_asked || app.get_subcommands().empty()) {
      // `lumen help` asked for it (0); a bare `lumen` did not say what to do (2).
      if (launch_leader) {
        fmt::print(help_asked ? stdout : stderr, "{}",
                   app.get_formatter()->make_help(&app, "lumen", CLI::AppFormatMode::Normal));
      }
      return help_asked ? 0 : 2;
    }
  } catch (const CLI::ExtrasError& e) {
    if (!launch_leader) return app.exit(e, discarded, discarded);
    const int status = app.exit(e);
    fmt::print(stderr, "{}", lumen::cli::suggest_options(app, app.remaining(true)));
    return status;
  } catch (const CLI::ParseError& e) {
    return launch_leader ? app.exit(e) : app.exit(e, discarded, discarded);
  } catch (const lumen::Error& e) {
    report_error(launch, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    report_error(launch, "out of memory");
    return 1;
  } catch (const std::exception& e) {
    report_error(launch, e.what());
    return 1;
  }
  return 0;
}
