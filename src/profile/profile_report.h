#pragma once
// `lumen bench profile`'s output: the JSON document (ceilings, and per step shape its ops, parts
// and threads with achieved rates against the roofline) and the text tables made from it.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/machine_ceilings.h"
#include "profile/profile_run.h"

namespace lumen::profile {

struct ModelSummary {
  std::string path;
  std::string description;  // "llama 135M Q4_1"
  WeightStream weights;
};

nlohmann::json ceilings_json(const MachineCeilings& ceilings);
nlohmann::json shape_json(const ShapeProfile& profile, const MachineCeilings& ceilings, const ModelSummary& model);
// The text report of one shape (from shape_json's document): summary lines, the op table, the
// part table (compact: one line per part) and the threads.
std::string shape_text(const nlohmann::json& shape);
std::string ceilings_text(const nlohmann::json& ceilings);

}  // namespace lumen::profile
