#include "cli/context_shift_flags.h"

#include <charconv>
#include <string_view>

#include "lumen/kv_eviction.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

// "sink:N" or "window:W": the count after `name:`.
bool parse_part(std::string_view part, std::string_view name, int64_t& out) {
  if (part.size() <= name.size() + 1 || part.substr(0, name.size()) != name || part[name.size()] != ':') return false;
  const std::string_view digits = part.substr(name.size() + 1);
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), out);
  return ec == std::errc() && end == digits.data() + digits.size() && out >= 0;
}

}  // namespace

void ContextShiftFlags::add_to(CLI::App* cmd) {
  cmd->add_option("--context-overflow", overflow,
                  "At the end of the context: finish (\"length\") or shift (drop the oldest positions after "
                  "--context-keep and go on, as llama.cpp)")
      ->check(CLI::IsMember({"finish", "shift"}))->capture_default_str();
  cmd->add_option("--context-keep", keep, "Positions a context shift keeps at the start")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  cmd->add_option("--kv-eviction", eviction,
                  "sink:N,window:W: StreamingLLM, keep the first N and the last W positions and generate past the "
                  "context in flat memory. snapkv:budget=B[,window=W,kernel=K]: after the prompt, keep each layer "
                  "and KV head's B positions most attended by the prompt's last W queries (default 32, max-pooled "
                  "over K = 7). h2o:budget=B[,recent=R]: keep at most B positions (whole blocks), the R last "
                  "(default B/2) and the most attended so far");
}

void ContextShiftFlags::apply(EngineConfig& config) const {
  config.context_overflow = overflow == "shift" ? ContextOverflow::Shift : ContextOverflow::Finish;
  config.context_keep_tokens = keep;
  if (eviction.empty()) return;
  const std::string_view text = eviction;
  if (text.starts_with("snapkv:") || text.starts_with("h2o:")) {
    try {
      config.kv_importance = parse_kv_importance(text);
    } catch (const Error& e) {  // its words are the request field's: name the flag instead
      fail("--kv-eviction: {}", e.what());
    }
    return;
  }
  if (!text.starts_with("sink:")) {
    fail(
        "--kv-eviction takes sink:N,window:W, snapkv:budget=B[,window=W,kernel=K] or h2o:budget=B[,recent=R], "
        "not '{}'",
        eviction);
  }
  const size_t comma = text.find(',');
  int64_t sinks = 0, window = 0;
  if (comma == std::string_view::npos || !parse_part(text.substr(0, comma), "sink", sinks) ||
      !parse_part(text.substr(comma + 1), "window", window) || window == 0) {
    fail("--kv-eviction takes sink:N,window:W with counts (W > 0), not '{}'", eviction);
  }
  config.context_keep_tokens = sinks;
  config.kv_window_tokens = window;
}

}  // namespace lumen::cli
