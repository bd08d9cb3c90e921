// `lumen quantize IN.gguf OUT.gguf TYPE`: a model rewritten in another file type, with the
// tensors llama-quantize would write for the same input and type, byte for byte
// (quantize/quantize_model.h). Progress goes to stderr, one line per tensor; the summary to
// stdout.
#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "cli/commands.h"
#include "quantize/quantize_model.h"
#include "tensor/quantize.h"
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
};

std::optional<tensor::DType> tensor_type_option(const std::string& name, const char* option) {
  if (name.empty()) return std::nullopt;
  const auto type = tensor::dtype_from_name(name);
  if (!type || !tensor::has_ggml_quantizer(*type)) {
    fail("{} {}: not a type Lumen can write (F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
         "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K)", option, name);
  }
  return type;
}

double mib(uint64_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }

std::string shape_of(const std::vector<int64_t>& dims) {
  std::string shape;
  for (int64_t dim : dims) shape += (shape.empty() ? "" : ", ") + std::to_string(dim);
  return "[" + shape + "]";
}

void run_quantize(QuantizeCliOptions& o) {
  const auto mix = quantize::mix_from_name(o.type);
  if (!mix) fail("unknown quantization type '{}'; choose one of {}", o.type, quantize::mix_names());
  o.run.mix = *mix;
  o.run.output_tensor_type = tensor_type_option(o.output_tensor_type, "--output-tensor-type");
  o.run.token_embedding_type = tensor_type_option(o.token_embedding_type, "--token-embedding-type");

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
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  auto options = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize",
      "Rewrite a GGUF model in another type (Q4_K_M, Q8_0, F16...), with the tensors "
      "llama-quantize writes for the same input and type");
  cmd->add_option("input", options->input, "Input GGUF (F32, F16 or BF16 weights)")->required();
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
  cmd->add_flag("--pure", options->run.pure,
                "Every quantizable tensor in TYPE's base type: no mix rules (rows that are not "
                "whole blocks still fall back)");
  cmd->callback([options] { run_quantize(*options); });
}

}  // namespace lumen::cli
