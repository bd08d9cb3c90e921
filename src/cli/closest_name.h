#pragma once
// The closest of some known names to one a user typed: by prefix either way (--temperature for
// --temp) or by a small edit distance (a typo). Used for options and for catalog model names.
#include <optional>
#include <string>
#include <vector>

namespace lumen::cli {

std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known);

}  // namespace lumen::cli
