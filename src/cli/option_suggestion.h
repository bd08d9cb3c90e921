#pragma once
// "Did you mean --temp?" for an option the command does not have: the closest of its long
// options, by prefix (--temperature for --temp) or by edit distance (a typo).
#include <CLI/CLI.hpp>
#include <optional>
#include <string>
#include <vector>

namespace lumen::cli {

// The best known option for `unknown` (e.g. "--temperature") among `known` ("--temp", ...).
std::optional<std::string> closest_option(const std::string& unknown, const std::vector<std::string>& known);

// For an unexpected-arguments error: a line suggesting a known option for each unknown one that
// has a close match, found among the options of the deepest subcommand that was parsed.
std::string suggest_options(const CLI::App& app, const std::vector<std::string>& unexpected);

}  // namespace lumen::cli
