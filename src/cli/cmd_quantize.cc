// `lumen quantize IN.gguf OUT.gguf TYPE`: a model rewritten in another file type, with the
// tensors llama-quantize would write for the same input and type, byte for byte
// (quantize/quantize_model.h). Progress goes to stderr, one line per tensor; the summary to
// stdout.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/byte_units.h"
#include "cli/commands.h"
#include "cli/default_model.h"
#include "cli/quantize_report.h"
#include "cli/text_file.h"
#include "quantize/quantize_model.h"
#include "tensor/quantize.h"
#include "tools/quantize_candidates.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct QuantizeCliOptions {
  std::string input;
  std::string output;
  std::string type;
  std::string output_tensor_type;
  std::string token_embedding_type;
  quantize::QuantizeOptions run;
  bool report = false;         // print the per-tensor error table (and candidates) to stdout
  std::string report_json;     // write the report as JSON to this file ("-": stdout)
  std::string report_text;     // measure perplexity over this text
  std::string report_types;    // candidate types for the perplexity, comma-separated (default: TYPE)
  int64_t report_ctx = 512;
  int64_t report_chunks = -1;
};

std::vector<quantize::Mix> candidate_mixes(const std::string& list, quantize::Mix chosen) {
  std::vector<quantize::Mix> mixes;
  size_t start = 0;
  while (start <= list.size() && !list.empty()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string name = list.substr(start, comma - start);
    const auto mix = quantize::mix_from_name(name);
    if (!mix) fail("--report-types: unknown type '{}'; choose from {}", name, quantize::mix_names());
    if (std::find(mixes.begin(), mixes.end(), *mix) == mixes.end()) mixes.push_back(*mix);
    start = comma + 1;
  }
  if (mixes.empty()) mixes.push_back(chosen);
  return mixes;
}

// The perplexity of the input, of the file just written, and of every other candidate type.
std::vector<tools::CandidateResult> measure_candidates(const QuantizeCliOptions& o, const std::vector<quantize::Mix>& mixes,
                                                       const std::string& text,
                                                       const quantize::QuantizeReport& written) {
  tools::PerplexityOptions ppl;
  ppl.n_ctx = o.report_ctx;
  ppl.max_chunks = o.report_chunks;
  ppl.threads = o.run.threads;
  const auto bpw = [](uint64_t bytes, uint64_t elements) {
    return elements == 0 ? 0.0 : 8.0 * static_cast<double>(bytes) / static_cast<double>(elements);
  };
  const auto done = [](const tools::CandidateResult& c) {
    fmt::print(stderr, "perplexity of {}: {:.4f} +/- {:.4f}\n", c.type, c.ppl.value, c.ppl.error);
  };
  std::vector<tools::CandidateResult> results;
  results.push_back(tools::measure_model(o.input, "input", text, ppl, o.run.threads));
  results.back().bits_per_weight = bpw(written.bytes_in, written.elements);
  done(results.back());
  for (const quantize::Mix mix : mixes) {
    if (mix == o.run.mix) {  // already written: measure the output itself
      results.push_back(tools::measure_model(o.output, std::string(quantize::mix_info(mix).name), text, ppl, o.run.threads));
      results.back().bits_per_weight = bpw(written.bytes_out, written.elements);
      done(results.back());
    } else {
      auto measured = tools::compare_candidates(o.input, {mix}, o.run, text, ppl, o.output + ".candidate.gguf", done);
      results.push_back(std::move(measured.front()));
    }
  }
  return results;
}

void write_report(const QuantizeCliOptions& o, const quantize::QuantizeReport& report,
                  const std::vector<tools::CandidateResult>& candidates) {
  if (o.report) {
    fmt::print("{}", render_tensor_errors(report));
    if (!candidates.empty()) fmt::print("\n{}", render_candidates(candidates));
  }
  if (o.report_json.empty()) return;
  const std::string json = quantize_report_json(std::string(quantize::mix_info(o.run.mix).name), report, candidates).dump(2);
  if (o.report_json == "-") {
    fmt::print("{}\n", json);
    return;
  }
  std::FILE* file = std::fopen(o.report_json.c_str(), "w");
  if (file == nullptr) fail("--report-json {}: cannot write it", o.report_json);
  fmt::print(file, "{}\n", json);
  if (std::fclose(file) != 0) fail("--report-json {}: cannot write it", o.report_json);
}

std::optional<tensor::DType> tensor_type_option(const std::string& name, const char* option) {
  if (name.empty()) return std::nullopt;
  const auto type = tensor::dtype_from_name(name);
  if (!type || !tensor::has_ggml_quantizer(*type)) {
    fail("{} {}: not a type Lumen can write (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
         "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)", option, name);
  }
  return type;
}

std::string shape_of(const std::vector<int64_t>& dims) {
  std::string shape;
  for (int64_t dim : dims) shape += (shape.empty() ? "" : ", ") + std::to_string(dim);
  return "[" + shape + "]";
}

void run_quantize(QuantizeCliOptions& o) {
  // A catalog name (`smollm2`) names its file in the cache, as -m does elsewhere.
  o.input = resolve_model_path(o.input);
  const auto mix = quantize::mix_from_name(o.type);
  if (!mix) fail("unknown quantization type '{}'; choose one of {}", o.type, quantize::mix_names());
  o.run.mix = *mix;
  o.run.output_tensor_type = tensor_type_option(o.output_tensor_type, "--output-tensor-type");
  o.run.token_embedding_type = tensor_type_option(o.token_embedding_type, "--token-embedding-type");
  // Everything the report needs is checked before anything is written.
  const bool reporting = o.report || !o.report_json.empty() || !o.report_text.empty();
  o.run.measure_error = reporting;
  const std::vector<quantize::Mix> mixes = candidate_mixes(o.report_types, o.run.mix);
  if (!o.report_types.empty() && o.report_text.empty()) fail("--report-types needs --report-text FILE");
  const std::string text = o.report_text.empty() ? std::string() : read_text_file(o.report_text, "--report-text file");

  const auto start = std::chrono::steady_clock::now();
  const auto progress = [](const quantize::TensorPlanEntry& t, size_t index, size_t count) {
    const std::string change =
        t.from == t.to ? fmt::format("{} (copied)", tensor::dtype_name(t.to))
                       : fmt::format("{} -> {}", tensor::dtype_name(t.from), tensor::dtype_name(t.to));
    fmt::print(stderr, "[{:4}/{:4}] {:<36} {:<18} {:<16} {:8.2f} MiB -> {:8.2f} MiB\n", index + 1,
               count, t.name, shape_of(t.dims), change, mib(t.bytes_in), mib(t.bytes_out));
  };
  const quantize::QuantizeReport report =
      quantize::quantize_model(o.input, o.output, o.run, progress);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  if (!report.plan.without_importance.empty()) {
    fmt::print(stderr, "note: {} quantized tensor(s) have no importance-matrix entry and are quantized "
                       "unweighted, as llama-quantize does:", report.plan.without_importance.size());
    for (const std::string& name : report.plan.without_importance) fmt::print(stderr, " {}", name);
    fmt::print(stderr, "\n");
  }
  for (const std::string& fallback : report.plan.fallbacks) {
    fmt::print(stderr, "note: {}\n", fallback);
  }
  if (report.plan.requantizes) {
    fmt::print(stderr, "warning: requantized tensors that were already quantized; the result is "
                       "worse than quantizing the original F16/BF16/F32 model\n");
  }
  const double bits_per_weight =
      report.elements == 0 ? 0.0
                           : 8.0 * static_cast<double>(report.bytes_out) / static_cast<double>(report.elements);
  fmt::print("wrote {} ({}): {} tensors, {:.2f} MiB -> {:.2f} MiB ({:.2f} bits per weight) in {:.2f} s\n",
             o.output, quantize::mix_info(o.run.mix).name, report.plan.tensors.size(),
             mib(report.bytes_in), mib(report.bytes_out), bits_per_weight, seconds);
  if (!reporting) return;
  std::fflush(stdout);
  const std::vector<tools::CandidateResult> candidates =
      text.empty() ? std::vector<tools::CandidateResult>{} : measure_candidates(o, mixes, text, report);
  write_report(o, report, candidates);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto options = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Rewrite a GGUF model in another type (Q4_K_M, Q8_0, F16...), with the tensors "
      "llama-quantize writes for the same input and type");
  cmd->add_option("input", options->input, "Input GGUF (F32, F16 or BF16 weights), a path or a catalog name")->required();
  cmd->add_option("output", options->output, "Output GGUF (written under a temporary name, then "
                                              "renamed)")->required();
  cmd->add_option("type", options->type, "One of " + quantize::mix_names())->required();
  cmd->add_option("-t,--threads", options->run.threads, "Threads (default: all)");
  cmd->add_flag("--allow-requantize", options->run.allow_requantize,
                "Accept already-quantized input tensors: dequantize, then requantize (loses "
                "quality)");
  cmd->add_option("--output-tensor-type", options->output_tensor_type,
                  "Type of output.weight (and of a tied token_embd)");
  cmd->add_option("--token-embedding-type", options->token_embedding_type,
                  "Type of token_embd.weight");
  cmd->add_option("--imatrix", options->run.imatrix_path,
                  "Importance matrix (llama.cpp's imatrix GGUF, from `lumen imatrix` or llama-imatrix): "
                  "weights each column's error as llama-quantize --imatrix does");
  cmd->add_flag("--report", options->report,
                "Print each converted tensor's relative RMSE (values read back vs the input's), and with "
                "--report-text each candidate type's size and perplexity");
  cmd->add_option("--report-json", options->report_json, "Write that report as JSON to FILE ('-': stdout)");
  cmd->add_option("--report-text", options->report_text,
                  "Measure the perplexity of the input and of each --report-types candidate over this text "
                  "(as `lumen perplexity`; candidates are quantized into OUTPUT.candidate.gguf, then removed)");
  cmd->add_option("--report-types", options->report_types,
                  "Candidate types for --report-text, comma-separated (default: TYPE)");
  cmd->add_option("--report-ctx", options->report_ctx, "Perplexity window for --report-text")->capture_default_str();
  cmd->add_option("--report-chunks", options->report_chunks, "At most this many perplexity windows (-1: all)")
      ->capture_default_str();
  cmd->add_flag("--pure", options->run.pure,
                "Every quantizable tensor in TYPE's base type: no mix rules (rows that are not "
                "whole blocks still fall back)");
  cmd->callback([options] { run_quantize(*options); });
}

}  // namespace lumen::cli
