// The architectures Lumen runs. Each is one file under model/arch/ defining a factory; adding
// one is that file plus its line in kRegistry (and its declaration just above).
#include <fmt/ranges.h>

#include <array>

#include "model/arch/architecture.h"
#include "util/error.h"

namespace lumen::model {

Architecture llama_architecture();
Architecture qwen2_architecture();
Architecture gemma3_architecture();

namespace {

const std::array kRegistry = {
    llama_architecture,
    qwen2_architecture,
    gemma3_architecture,
};

// Built once: descriptors are immutable after this.
const std::vector<Architecture>& registered() {
  static const std::vector<Architecture> all = [] {
    std::vector<Architecture> out;
    for (auto factory : kRegistry) out.push_back(factory());
    return out;
  }();
  return all;
}

}  // namespace

const Architecture* find_architecture(std::string_view name) {
  for (const Architecture& arch : registered()) {
    if (arch.name == name) return &arch;
  }
  return nullptr;
}

std::vector<std::string> architecture_names() {
  std::vector<std::string> names;
  for (const Architecture& arch : registered()) names.push_back(arch.name);
  return names;
}

const Architecture& architecture_for(const HParams& hp) {
  if (const Architecture* arch = find_architecture(hp.architecture)) return *arch;
  fail("architecture '{}' is not supported (supported: {})", hp.architecture, fmt::join(architecture_names(), ", "));
}

}  // namespace lumen::model
