#include "cli/closest_name.h"

#include <algorithm>
#include <cstdint>
#include <utility>

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

}  // namespace

std::optional<std::string> closest_name(const std::string& typed, const std::vector<std::string>& known) {
  std::optional<std::string> best;
  std::pair<bool, size_t> best_score = {true, SIZE_MAX};
  for (const std::string& candidate : known) {
    // A prefix either way is the likeliest intent (--temperature / --temp, --thread / --threads);
    // among several, the nearest (stop_token_id: stop_token_ids, not stop).
    const bool prefix = candidate.size() >= 4 && (typed.rfind(candidate, 0) == 0 || candidate.rfind(typed, 0) == 0);
    const size_t distance = edit_distance(typed, candidate);
    const std::pair<bool, size_t> score = {!prefix, distance};
    const size_t allowed = std::max<size_t>(2, typed.size() / 4);
    if ((prefix || distance <= allowed) && score < best_score) {
      best = candidate;
      best_score = score;
    }
  }
  return best;
}

}  // namespace lumen::cli
