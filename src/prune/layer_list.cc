#include "prune/layer_list.h"

#include <charconv>
#include <string_view>

#include "util/error.h"

namespace lumen::prune {

namespace {

uint64_t index_of(std::string_view part, const std::string& whole) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
  if (part.empty() || ec != std::errc() || end != part.data() + part.size() || value > 1'000'000) {
    fail("--layers {}: '{}' is not a layer index", whole, part);
  }
  return value;
}

}  // namespace

std::vector<uint64_t> parse_layer_list(const std::string& text) {
  std::vector<uint64_t> layers;
  std::string_view rest = text;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string_view part = rest.substr(0, comma);
    const size_t dash = part.find('-');
    const uint64_t first = index_of(part.substr(0, dash), text);
    const uint64_t last = dash == std::string_view::npos ? first : index_of(part.substr(dash + 1), text);
    if (last < first) fail("--layers {}: the range '{}' goes backwards", text, part);
    for (uint64_t layer = first; layer <= last; ++layer) {
      if (!layers.empty() && layer <= layers.back()) {
        fail("--layers {}: layer {} is not after the layers before it (list them in ascending order, once each)", text,
             layer);
      }
      layers.push_back(layer);
    }
    if (comma == std::string_view::npos) break;
    rest = rest.substr(comma + 1);
  }
  return layers;
}

std::vector<uint64_t> first_layers(uint64_t count) {
  std::vector<uint64_t> layers(count);
  for (uint64_t i = 0; i < count; ++i) layers[i] = i;
  return layers;
}

}  // namespace lumen::prune
