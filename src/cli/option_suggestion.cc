#include "cli/option_suggestion.h"

#include <fmt/format.h>

#include "cli/closest_name.h"

namespace lumen::cli {

namespace {

const CLI::App* deepest_parsed(const CLI::App& app) {
  for (const CLI::App* sub : app.get_subcommands()) return deepest_parsed(*sub);
  return &app;
}

}  // namespace

std::optional<std::string> closest_option(const std::string& unknown, const std::vector<std::string>& known) {
  const std::string name = unknown.substr(0, unknown.find('='));
  if (name.size() < 3 || name.rfind("--", 0) != 0) return std::nullopt;
  return closest_name(name, known);
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
