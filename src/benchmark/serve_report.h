#pragma once
// The result of a `lumen bench serve` run as JSON (the config it ran with, counts, throughput,
// goodput, and the TTFT / TPOT / ITL / end-to-end latency summaries in milliseconds), and the
// same as a human-readable table.
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "benchmark/goodput.h"
#include "benchmark/load_runner.h"

namespace lumen::benchmark {

// known_prompt_tokens[i]: request i's prompt length when known without the server (token
// prompts), else -1; the server's usage count is preferred when it gives one. per_request
// adds "requests": each one's outcome, TTFT, TPOT, end-to-end latency and token counts.
nlohmann::ordered_json serve_report(const LoadRun& run, const std::vector<int64_t>& known_prompt_tokens,
                                    const ServiceLevelObjectives& slos, nlohmann::ordered_json config,
                                    bool per_request = false);

std::string format_serve_report(const nlohmann::ordered_json& report);

}  // namespace lumen::benchmark
