#include "profile/profile_report.h"

#include <fmt/format.h>

#include "profile/roofline.h"

namespace lumen::profile {

namespace {

nlohmann::json totals_json(const Totals& t, double step_ns, const MachineCeilings& ceilings) {
  const RooflinePoint p = roofline_point(t.cost, t.ns / 1e9, ceilings);
  return {{"name", t.name},
          {"calls", t.calls},
          {"ms", t.ns / 1e6},
          {"share", step_ns > 0 ? t.ns / step_ns : 0.0},
          {"bytes", t.cost.bytes},
          {"flops", t.cost.flops},
          {"int8", t.cost.int8},
          {"gbps", p.gbps},
          {"gflops", p.achieved},
          {"intensity", p.intensity},
          {"bound", t.cost.flops <= 0 ? "memory" : (p.memory_bound ? "memory" : "compute")},
          {"attainable_gflops", p.attainable},
          {"roofline_efficiency", p.efficiency}};
}

// The per-op table and the per-part line.
std::string ops_text(const nlohmann::json& s) {
  std::string out;
  constexpr const char* kRow = "{:<44} {:>6} {:>9} {:>6} {:>10} {:>10} {:>9} {:>8} {:>7}\n";
  out += fmt::format(kRow, "op", "calls", "ms", "share", "GB/s", "GFLOP/s", "FLOP/B", "bound", "roof%");
  for (const auto& op : s["ops"]) {
    out += fmt::format(
        kRow, op["name"].get<std::string>(), op["calls"].get<int64_t>(), fmt::format("{:.3f}", op["ms"].get<double>()),
        fmt::format("{:.1f}%", 100 * op["share"].get<double>()), fmt::format("{:.1f}", op["gbps"].get<double>()),
        fmt::format("{:.1f}", op["gflops"].get<double>()), fmt::format("{:.2f}", op["intensity"].get<double>()),
        op["bound"].get<std::string>(), fmt::format("{:.0f}%", 100 * op["roofline_efficiency"].get<double>()));
  }
  out += "\nper part (ms): ";
  for (const auto& part : s["parts"]) {
    out += fmt::format("{} {:.3f}; ", part["name"].get<std::string>(), part["ms"].get<double>());
  }
  return out;
}

// A device's step: the ops' device time back to back, beside the steps as the engine runs them.
std::string device_shape_text(const nlohmann::json& s) {
  std::string out = fmt::format(
      "\n## {}: {:.3f} ms per step on the host's clock, {:.3f} ms on the device's ({} of {} replayed), "
      "{:.1f} tokens/s\n"
      "recorded op by op: ops {:.3f} ms on the device, idle between them {:.3f} ms\n"
      "weights streamed at {:.1f} GB/s = {:.0f}% of the copy bandwidth; with the context's {:.1f} MB "
      "(KV read, state read and written) {:.0f}%\n\n",
      s["step"].get<std::string>(), s["unrecorded_step_ms"].get<double>(), s["unrecorded_device_step_ms"].get<double>(),
      s["unrecorded_replayed_steps"].get<uint64_t>(), s["repetitions"].get<int64_t>(),
      s["tokens_per_second"].get<double>(), s["ops_ms"].get<double>(), s["between_ops_ms"].get<double>(),
      s["weight_stream_gbps"].get<double>(), 100.0 * s["bandwidth_bound_share"].get<double>(),
      s["context_bytes"].get<double>() / 1e6, 100.0 * s["bandwidth_bound_share_with_context"].get<double>());
  out += ops_text(s);
  out += "\n";
  return out;
}

}  // namespace

nlohmann::json ceilings_json(const MachineCeilings& c) {
  if (!c.device.empty()) {
    // read_gbps keeps its name for the roofline's readers: here a device-to-device copy's rate.
    return {{"device", c.device},
            {"read_gbps", c.read_gbps},
            {"read_gbps_is", "a device-to-device copy: bytes read plus bytes written per second"},
            {"f16_tensor_gflops", c.fp32_gflops},
            {"int8_tensor_gops", c.int8_gops}};
  }
  return {{"isa", c.isa},
          {"threads", c.threads},
          {"read_gbps", c.read_gbps},
          {"fp32_gflops", c.fp32_gflops},
          {"int8_gops", c.int8_gops},
          {"int8_256bit_gops", c.int8_256_gops}};
}

nlohmann::json shape_json(const ShapeProfile& profile, const MachineCeilings& ceilings, const ModelSummary& model) {
  const StepBreakdown& b = profile.breakdown;
  const StepShape& s = profile.shape;
  nlohmann::json out;
  out["step"] = s.label();
  out["kind"] = s.verify ? "verify" : s.decode ? "decode" : "prefill";
  out["batch"] = s.batch;
  out["new_tokens_per_sequence"] = s.tokens;
  out["context"] = s.context;
  out["repetitions"] = b.repetitions;
  out["step_ms"] = b.step_ns / 1e6;
  out["unrecorded_step_ms"] = profile.unrecorded_step_ns / 1e6;
  // The recorder's own cost: its clock reads and bookkeeping between the ops.
  out["recording_overhead"] = profile.unrecorded_step_ns > 0 ? b.step_ns / profile.unrecorded_step_ns - 1.0 : 0.0;
  out["tokens_per_second"] = profile.unrecorded_step_ns > 0 ? static_cast<double>(s.new_tokens()) * 1e9 / profile.unrecorded_step_ns : 0.0;
  if (profile.unrecorded_device_step_ns > 0) {
    // A device's recorded step is its ops back to back on the device (op_profiler.h); the
    // unrecorded steps ran as the engine runs them: their device time, and how many replayed.
    out["unrecorded_device_step_ms"] = profile.unrecorded_device_step_ns / 1e6;
    out["unrecorded_replayed_steps"] = profile.replayed_steps;
  }
  out["ops_ms"] = b.op_ns / 1e6;
  out["between_ops_ms"] = (b.step_ns - b.op_ns) / 1e6;
  out["parallel_ms"] = b.parallel_ns / 1e6;
  // Time with no worker in a task: serial code (the model's, and ops' serial parts) and the
  // pool's hand-offs, while every other thread waits.
  out["serial_ms"] = (b.step_ns - b.parallel_ns) / 1e6;
  OpCost all;
  for (const Totals& t : b.by_op) all += t.cost;
  out["bytes"] = all.bytes;
  out["flops"] = all.flops;
  // The bound issue 23 measures decode against: the weights streamed once per step at the
  // measured read bandwidth.
  const double steps_per_s = profile.unrecorded_step_ns > 0 ? 1e9 / profile.unrecorded_step_ns : 0.0;
  const double weight_bytes = model.weights.bytes_for(profile.shape.new_tokens());
  out["weight_bytes"] = weight_bytes;
  out["weight_stream_gbps"] = weight_bytes * steps_per_s / 1e9;
  out["bandwidth_bound_share"] = ceilings.read_gbps > 0 ? weight_bytes * steps_per_s / 1e9 / ceilings.read_gbps : 0.0;
  // The same bound with the step's context traffic added: the keys and values attention reads
  // (a Transformer), the recurrent state read and written back (Mamba 2), as the ops' costs
  // count them (op_cost.h). A state model's decode cannot stream less than both.
  out["context_bytes"] = all.context_bytes;
  out["bandwidth_bound_share_with_context"] =
      ceilings.read_gbps > 0 ? (weight_bytes + all.context_bytes) * steps_per_s / 1e9 / ceilings.read_gbps : 0.0;
  out["ops"] = nlohmann::json::array();
  for (const Totals& t : b.by_op) out["ops"].push_back(totals_json(t, b.step_ns, ceilings));
  out["parts"] = nlohmann::json::array();
  for (const Totals& t : b.by_part) out["parts"].push_back(totals_json(t, b.step_ns, ceilings));
  out["ops_by_part"] = nlohmann::json::array();
  for (const Totals& t : b.by_op_in_part) out["ops_by_part"].push_back(totals_json(t, b.step_ns, ceilings));
  out["threads"] = nlohmann::json::array();
  for (const ThreadTotals& t : b.threads) {
    out["threads"].push_back({{"worker", t.worker},
                              {"task_ms", t.task_ns / 1e6},
                              {"idle_ms", t.idle_ns / 1e6},
                              {"busy_share", b.step_ns > 0 ? t.task_ns / b.step_ns : 0.0}});
  }
  return out;
}

std::string ceilings_text(const nlohmann::json& c) {
  if (c.contains("device")) {
    return fmt::format(
        "device ({}): copy {:.1f} GB/s (read + written), f16 tensor cores {:.1f} TFLOP/s, int8 {:.1f} TOP/s\n",
        c["device"].get<std::string>(), c["read_gbps"].get<double>(), c["f16_tensor_gflops"].get<double>() / 1e3,
        c["int8_tensor_gops"].get<double>() / 1e3);
  }
  return fmt::format("machine ({} threads, {}): read {:.1f} GB/s, f32 {:.1f} GFLOP/s, int8 {:.1f} GOP/s{}\n",
                     c["threads"].get<unsigned>(), c["isa"].get<std::string>(), c["read_gbps"].get<double>(),
                     c["fp32_gflops"].get<double>(), c["int8_gops"].get<double>(),
                     c["int8_256bit_gops"].get<double>() > 0
                         ? fmt::format(" (256-bit vectors: {:.1f})", c["int8_256bit_gops"].get<double>())
                         : std::string());
}

std::string shape_text(const nlohmann::json& s) {
  if (s.contains("unrecorded_device_step_ms")) return device_shape_text(s);
  std::string out = fmt::format(
      "\n## {}: {:.3f} ms per step ({:.3f} ms recorded), {:.1f} tokens/s\n"
      "ops {:.3f} ms, between ops {:.3f} ms; no worker in a task for {:.3f} ms ({:.0f}% of the step)\n"
      "weights streamed at {:.1f} GB/s = {:.0f}% of the read bandwidth; with the context's {:.1f} MB "
      "(KV read, state read and written) {:.0f}%\n\n",
      s["step"].get<std::string>(), s["unrecorded_step_ms"].get<double>(), s["step_ms"].get<double>(),
      s["tokens_per_second"].get<double>(), s["ops_ms"].get<double>(), s["between_ops_ms"].get<double>(),
      s["serial_ms"].get<double>(), 100.0 * s["serial_ms"].get<double>() / std::max(s["step_ms"].get<double>(), 1e-9),
      s["weight_stream_gbps"].get<double>(), 100.0 * s["bandwidth_bound_share"].get<double>(),
      s["context_bytes"].get<double>() / 1e6, 100.0 * s["bandwidth_bound_share_with_context"].get<double>());
  out += ops_text(s);
  out += "\nthreads: ";
  for (const auto& t : s["threads"]) {
    out += fmt::format("worker {} busy {:.3f} ms ({:.0f}%), idle {:.3f} ms; ", t["worker"].get<unsigned>(),
                       t["task_ms"].get<double>(), 100 * t["busy_share"].get<double>(), t["idle_ms"].get<double>());
  }
  out += "\n";
  return out;
}

}  // namespace lumen::profile
