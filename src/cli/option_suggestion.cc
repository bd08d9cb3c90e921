#include "cli/option_suggestion.h"

#include <fmt/format.h>

#include <algorithm>

namespace lumen::cli {

namespace {

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

const CLI::App* deepest_parsed(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return deepest_parsed(*sub);
  return &app;
}

}  // namespace

std::optional<std::string> closest_option(const std::string& unknown, const std::vector<std::string>& known) {
  const std::string name = unknown.substr(0, unknown.find('='));
  if (name.size() < 3 || name.rfind("--", 0) != 0) return std::nullopt;
  std::optional<std::string> best;
  size_t best_score = SIZE_MAX;
  for (const std::string& candidate : known) {
    // A prefix either way is the likeliest intent (--temperature / --temp, --thread / --threads).
    const bool prefix = candidate.size() >= 4 && (name.rfind(candidate, 0) == 0 || candidate.rfind(name, 0) == 0);
    const size_t distance = edit_distance(name, candidate);
    const size_t score = prefix ? 0 : distance;
    const size_t allowed = std::max<size_t>(2, name.size() / 4);
    if ((prefix || distance <= allowed) && score < best_score) {
      best = candidate;
      best_score = score;
    }
  }
  return best;
}

std::string suggest_options(const CLI::App& app, const std::vector<std::string>& unexpected) {
  const CLI::App* command = deepest_parsed(app);
  std::vector<std::string> known;
  for (const CLI::Option* option : command->get_options()) {
    for (const std::string& long_name : option->get_lnames()) known.push_back("--" + long_name);
  }
  std::string out;
  for (const std::string& arg : unexpected) {
    if (auto match = closest_option(arg, known)) {
      out += fmt::format("{}: unknown option '{}'; did you mean '{}'?\n", command->get_name(), arg, *match);
    }
  }
  return out;
}

}  // namespace lumen::cli
