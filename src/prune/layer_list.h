#pragma once
// Which layers `lumen prune` keeps: a count (the first L) or a list ("0-3,7,12").
#include <cstdint>
#include <string>
#include <vector>

namespace lumen::prune {

// "0-3,7,12" to {0, 1, 2, 3, 7, 12}: ascending, distinct. Throws lumen::Error naming the part
// that is not a layer index or range, or that repeats or goes backwards.
std::vector<uint64_t> parse_layer_list(const std::string& text);

// The first `count` layers.
std::vector<uint64_t> first_layers(uint64_t count);

}  // namespace lumen::prune
