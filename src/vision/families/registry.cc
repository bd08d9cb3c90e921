// The projector families Lumen runs: adding one is its file in this folder, its factory in
// families.h and its line below.
#include <fmt/ranges.h>

#include <array>

#include "util/error.h"
#include "vision/families/families.h"

namespace lumen::vision {

namespace {

const std::vector<ProjectorFamily>& registry() {
  static const std::vector<ProjectorFamily> families = {llava_mlp_family(), gemma3_family(), idefics3_family()};
  return families;
}

}  // namespace

std::vector<std::string_view> projector_types() {
  std::vector<std::string_view> out;
  for (const ProjectorFamily& f : registry()) out.push_back(f.projector_type);
  return out;
}

const ProjectorFamily& projector_family_for(std::string_view projector_type) {
  for (const ProjectorFamily& f : registry()) {
    if (f.projector_type == projector_type) return f;
  }
  fail("projector_type \"{}\" is not one Lumen runs (supported: {})", projector_type,
       fmt::join(projector_types(), ", "));
}

}  // namespace lumen::vision
