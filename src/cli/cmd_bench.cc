#include "cli/commands.h"

namespace lumen::cli {

void add_bench_command(CLI::App& app) {
  CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
  bench->require_subcommand(1);
  add_bench_latency_command(bench);
  add_bench_throughput_command(bench);
  add_bench_serve_command(bench);
  add_bench_grammar_command(bench);
  add_bench_profile_command(bench);
}

}  // namespace lumen::cli
