#include "benchmark/serve_report.h"

#include <fmt/format.h>

#include <map>

#include "benchmark/latency_summary.h"

namespace lumen::benchmark {

namespace {

nlohmann::ordered_json summary_ms(std::vector<double> seconds) {
  for (double& s : seconds) s *= 1e3;
  const LatencySummary s = summarize(std::move(seconds));
  return {{"count", s.count}, {"mean", s.mean}, {"std", s.stddev}, {"min", s.min},
          {"p50", s.p50},     {"p90", s.p90},   {"p99", s.p99},    {"max", s.max}};
}

double per_second(double amount, double seconds) { return seconds > 0 ? amount / seconds : 0.0; }

// vLLM's benchmark_serving writes its statistics as flat keys (`mean_ttft_ms`, `median_ttft_ms`,
// `std_ttft_ms`, `p99_ttft_ms`, ...): the same numbers beside the nested summaries, so scripts
// written for vLLM's JSON read Lumen's.
void add_vllm_flat_keys(nlohmann::ordered_json& report) {
  for (const char* metric : {"ttft", "tpot", "itl", "e2el"}) {
    const nlohmann::ordered_json summary = report[std::string(metric) + "_ms"];
    const std::pair<const char*, const char*> names[] = {
        {"mean", "mean"}, {"median", "p50"}, {"std", "std"}, {"p90", "p90"}, {"p99", "p99"}};
    for (const auto& [vllm_name, ours] : names) report[fmt::format("{}_{}_ms", vllm_name, metric)] = summary[ours];
  }
  report["duration"] = report["duration_s"];
}

}  // namespace

nlohmann::ordered_json serve_report(const LoadRun& run, const std::vector<int64_t>& known_prompt_tokens,
                                    const ServiceLevelObjectives& slos, nlohmann::ordered_json config,
                                    bool per_request) {
  int64_t completed = 0, input_tokens = 0, output_tokens = 0, good = 0;
  bool usage_everywhere = true;
  std::vector<double> ttft, tpot, itl, e2el;
  std::map<std::string, int64_t> errors;
  for (size_t i = 0; i < run.results.size(); ++i) {
    const RequestResult& r = run.results[i];
    if (!r.ok) {
      ++errors[r.error];
      continue;
    }
    ++completed;
    const int64_t known = i < known_prompt_tokens.size() ? known_prompt_tokens[i] : -1;
    input_tokens += r.prompt_tokens >= 0 ? r.prompt_tokens : std::max<int64_t>(known, 0);
    output_tokens += r.output_tokens;
    usage_everywhere = usage_everywhere && r.usage_reported;
    ttft.push_back(r.ttft);
    if (r.output_tokens > 1) tpot.push_back(r.tpot());
    itl.insert(itl.end(), r.itl.begin(), r.itl.end());
    e2el.push_back(r.e2el);
    if (!slos.empty() && meets_slos(r, slos)) ++good;
  }
  const double seconds = run.duration_s;
  nlohmann::ordered_json error_list = nlohmann::ordered_json::array();
  for (const auto& [message, count] : errors) {
    if (error_list.size() == 20) break;  // distinct messages; enough to see what went wrong
    error_list.push_back({{"message", message}, {"count", count}});
  }
  nlohmann::ordered_json slo_json = nlohmann::ordered_json::object();
  if (slos.ttft_ms) slo_json["ttft_ms"] = *slos.ttft_ms;
  if (slos.tpot_ms) slo_json["tpot_ms"] = *slos.tpot_ms;
  if (slos.e2el_ms) slo_json["e2el_ms"] = *slos.e2el_ms;
  nlohmann::ordered_json report = {
      {"config", std::move(config)},
      {"num_prompts", run.results.size()},
      {"completed", completed},
      {"failed", static_cast<int64_t>(run.results.size()) - completed},
      {"errors", std::move(error_list)},
      {"duration_s", seconds},
      {"peak_in_flight", run.peak_in_flight},
      {"total_input_tokens", input_tokens},
      {"total_output_tokens", output_tokens},
      {"output_tokens_from_usage", completed > 0 && usage_everywhere},
      {"request_throughput", per_second(static_cast<double>(completed), seconds)},
      {"output_throughput", per_second(static_cast<double>(output_tokens), seconds)},
      {"total_token_throughput", per_second(static_cast<double>(input_tokens + output_tokens), seconds)},
      {"goodput_slos", std::move(slo_json)},
      {"goodput", slos.empty() ? nlohmann::ordered_json()
                               : nlohmann::ordered_json(per_second(static_cast<double>(good), seconds))},
      {"ttft_ms", summary_ms(std::move(ttft))},
      {"tpot_ms", summary_ms(std::move(tpot))},
      {"itl_ms", summary_ms(std::move(itl))},
      {"e2el_ms", summary_ms(std::move(e2el))}};
  add_vllm_flat_keys(report);
  if (per_request) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const RequestResult& r : run.results) {
      list.push_back({{"ok", r.ok},
                      {"error", r.error},
                      {"ttft_ms", r.ttft * 1e3},
                      {"tpot_ms", r.tpot() * 1e3},
                      {"e2el_ms", r.e2el * 1e3},
                      {"text_chunks", r.text_chunks},
                      {"output_tokens", r.output_tokens},
                      {"prompt_tokens", r.prompt_tokens}});
    }
    report["requests"] = std::move(list);
  }
  return report;
}

std::string format_serve_report(const nlohmann::ordered_json& r) {
  std::string out;
  auto line = [&](const std::string& name, const std::string& value) {
    out += fmt::format("{:<36}{:>14}\n", name, value);
  };
  auto number = [](const nlohmann::ordered_json& v, int digits) {
    return v.is_number() ? fmt::format("{:.{}f}", v.get<double>(), digits) : std::string("-");
  };
  out += fmt::format("{:=^50}\n", " Serving Benchmark Result ");
  line("Successful requests:", std::to_string(r["completed"].get<int64_t>()));
  line("Failed requests:", std::to_string(r["failed"].get<int64_t>()));
  auto list_errors = [&] {
    for (const auto& e : r["errors"]) {
      out += fmt::format("error ({}x): {}\n", e["count"].get<int64_t>(), e["message"].get<std::string>());
    }
    out += std::string(50, '=') + "\n";
  };
  // With nothing through, a table of zeros would read as a measurement: only the errors.
  if (r["completed"].get<int64_t>() == 0) {
    list_errors();
    return out;
  }
  line("Peak requests in flight:", std::to_string(r["peak_in_flight"].get<int64_t>()));
  line("Benchmark duration (s):", number(r["duration_s"], 2));
  line("Total input tokens:", std::to_string(r["total_input_tokens"].get<int64_t>()));
  line("Total generated tokens:", std::to_string(r["total_output_tokens"].get<int64_t>()));
  line("Request throughput (req/s):", number(r["request_throughput"], 2));
  line("Output token throughput (tok/s):", number(r["output_throughput"], 2));
  line("Total token throughput (tok/s):", number(r["total_token_throughput"], 2));
  if (!r["goodput"].is_null()) line("Request goodput (req/s):", number(r["goodput"], 2));
  const std::pair<const char*, const char*> metrics[] = {{"ttft_ms", "Time to First Token"},
                                                         {"tpot_ms", "Time per Output Token (excl. 1st token)"},
                                                         {"itl_ms", "Inter-token Latency"},
                                                         {"e2el_ms", "End-to-end Latency"}};
  for (const auto& [key, title] : metrics) {
    out += fmt::format("{:-^50}\n", fmt::format(" {} ", title));
    const auto& m = r[key];
    const std::string name = std::string(key).substr(0, std::string(key).size() - 3);
    for (const char* stat : {"mean", "p50", "p90", "p99"}) {
      line(fmt::format("{} {} (ms):", stat, name), number(m[stat], 2));
    }
  }
  list_errors();
  return out;
}

}  // namespace lumen::benchmark
