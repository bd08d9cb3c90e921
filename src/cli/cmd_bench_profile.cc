// `lumen bench profile`: where a forward pass's time goes. Prefill and decode steps of the
// shapes asked for run through a recording backend (src/profile): per op and per layer their
// time, bytes, FLOPs and achieved rates against the machine's own measured ceilings (a roofline),
// each worker thread's busy and idle time, a Chrome trace of one step per shape and a roofline PNG.
// With --device cuda the ops are timed on the device's clock against its measured copy bandwidth
// and tensor-core rates.
#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/device_option.h"
#include "cli/kv_cache_dtype_flag.h"
#include "profile/chrome_trace.h"
#include "profile/profile_report.h"
#include "profile/profile_run.h"
#include "profile/roofline_plot.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct ProfileOptions {
  std::string model;
  std::vector<unsigned> threads = {std::max(1u, std::thread::hardware_concurrency())};
  std::vector<int64_t> prefill = {512};
  std::vector<int64_t> decode_batch = {1};
  std::vector<int64_t> verify_rows;
  int64_t context = 128;
  int repetitions = 5;
  bool json = false;
  std::string trace;
  std::string plot;
  KvCacheDtypeFlag kv;
  std::string device;
};

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out.flush()) fail("cannot write {}", path);
}

void run_profile(const ProfileOptions& options) {
  const std::string path = resolve_model_path(options.model);
  std::vector<profile::StepShape> shapes;
  for (int64_t n : options.prefill) {
    if (n > 0) shapes.push_back({false, 1, n, 0});
  }
  for (int64_t b : options.decode_batch) {
    if (b > 0) shapes.push_back({true, b, 1, options.context});
  }
  for (int64_t n : options.verify_rows) {
    if (n > 0) shapes.push_back({true, 1, n, options.context, true});
  }
  if (shapes.empty()) fail("nothing to profile: give --prefill, --decode-batch or --verify-rows sizes above 0");

  nlohmann::json doc = {{"model", path}, {"runs", nlohmann::json::array()}};
  nlohmann::json trace_events = nlohmann::json::array();
  // The plot keeps the breakdowns it draws.
  std::vector<std::unique_ptr<profile::ShapeProfile>> kept;
  std::vector<profile::PlottedStep> plotted;
  profile::MachineCeilings plot_ceilings;
  int pid = 1;
  // A device runs once: its host threads are not what is measured.
  const bool on_device = options.device != "cpu";
  const std::vector<unsigned> thread_counts = on_device ? std::vector<unsigned>{1} : options.threads;
  for (unsigned threads : thread_counts) {
    profile::ProfileRun run(path, threads, options.kv.value(), options.device);
    profile::MachineCeilings ceilings;
    if (on_device) {
      const std::optional<backend::DeviceCeilings> device = run.backend().measure_device_ceilings();
      if (!device) fail("bench profile: the {} backend cannot measure its limits", options.device);
      ceilings = profile::device_ceilings(*device);
    } else {
      ceilings = profile::measure_ceilings(*run.pool());
    }
    const profile::ModelSummary summary{path, run.description(), run.weight_stream()};
    doc["model_description"] = summary.description;
    nlohmann::json run_json = {{"device", options.device},
                               {"threads", run.threads()},
                               {"ceilings", profile::ceilings_json(ceilings)},
                               {"steps", nlohmann::json::array()}};
    const std::string where = on_device ? options.device : fmt::format("{} threads", threads);
    if (!options.json)
      fmt::print("# {}, {}\n{}", summary.description, where, profile::ceilings_text(run_json["ceilings"]));
    for (const profile::StepShape& shape : shapes) {
      auto result = std::make_unique<profile::ShapeProfile>(run.profile(shape, options.repetitions));
      nlohmann::json step = profile::shape_json(*result, ceilings, summary);
      if (!options.json) fmt::print("{}", profile::shape_text(step));
      run_json["steps"].push_back(std::move(step));
      const std::string title = fmt::format("{}, {}", shape.label(), where);
      for (auto& e : profile::chrome_trace_events(
               result->last, [&](uint32_t id) { return run.op_name(id); }, title, pid++)) {
        trace_events.push_back(std::move(e));
      }
      if (threads == thread_counts.back()) {
        plotted.push_back({title, &result->breakdown});
        plot_ceilings = ceilings;
      }
      kept.push_back(std::move(result));
    }
    doc["runs"].push_back(std::move(run_json));
  }
  if (!options.trace.empty()) write_file(options.trace, profile::chrome_trace_document(std::move(trace_events)).dump());
  if (!options.plot.empty()) {
    profile::write_roofline_png(options.plot, plot_ceilings, plotted,
                                fmt::format("Roofline: {}", doc["model_description"].get<std::string>()));
  }
  if (options.json) fmt::print("{}\n", doc.dump(2));
}

}  // namespace

void add_bench_profile_command(CLI::App* bench) {
  auto options = std::make_shared<ProfileOptions>();
  CLI::App* cmd = bench->add_subcommand("profile",
                                        "Per-op time, bytes, FLOPs and roofline of prefill and decode steps; thread "
                                        "timelines (CPU), device clock (CUDA)");
  cmd->add_option("-m,--model", options->model, "GGUF model (default: the default model)");
  cmd->add_option("-t,--threads", options->threads, "Thread counts (default: all cores)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--prefill", options->prefill, "Prompt lengths of the prefill steps (0: none)")
      ->delimiter(',')
      ->capture_default_str();
  cmd->add_option("--decode-batch", options->decode_batch, "Batch sizes of the decode steps (0: none)")
      ->delimiter(',')
      ->capture_default_str();
  // A verification step is the last token, its drafts and any lookahead rows: a few dozen at
  // most. The bound keeps a typo from asking for logits at thousands of rows (gigabytes).
  cmd->add_option("--verify-rows", options->verify_rows,
                  "Rows of one-sequence verification steps (speculative decoding's: logits at every row)")
      ->delimiter(',')
      ->check(CLI::Range(0, 256));
  cmd->add_option("--context", options->context, "Cached tokens per sequence before a decode or verification step")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("-r,--repetitions", options->repetitions, "Recorded steps per shape (and as many unrecorded)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  cmd->add_flag("--json", options->json, "Print the whole profile as JSON");
  cmd->add_option("--trace", options->trace, "Write a Chrome trace (Perfetto) of one step per shape here");
  cmd->add_option("--plot", options->plot, "Write the roofline chart (PNG) here");
  options->kv.add_to(cmd);
  // On a device each op is timed by the device's own events, its step's work held back until
  // queued whole so the ops run back to back (Backend::time_ops).
  add_device_option(cmd, options->device);
  cmd->callback([options] { run_profile(*options); });
}

}  // namespace lumen::cli
