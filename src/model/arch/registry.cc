// The architectures Lumen runs. Each is one file under model/arch/ defining a factory; adding
// one is that file plus its line in kRegistry (and its declaration just above).
#include <fmt/ranges.h>

#include <algorithm>
#include <array>

#include "model/arch/architecture.h"
#include "util/error.h"

namespace lumen::model {

Architecture llama_architecture();
Architecture qwen2_architecture();
Architecture gemma2_architecture();
Architecture gemma3_architecture();
Architecture mixtral_architecture();
Architecture qwen2moe_architecture();
Architecture qwen3_architecture();
Architecture qwen3moe_architecture();
Architecture olmoe_architecture();
Architecture deepseek2_architecture();
Architecture bert_architecture();
Architecture nomic_bert_architecture();
Architecture mamba2_architecture();
Architecture granite_hybrid_architecture();
Architecture rwkv7_architecture();
Architecture bloom_architecture();
Architecture phi3_architecture();
Architecture smollm3_architecture();
Architecture granite_architecture();
Architecture gpt_oss_architecture();

namespace {

// A variant comes before the plain architecture of its name: the first that applies wins.
// clang-format off
const std::array kRegistry = {
    mixtral_architecture,  // "llama" with experts
    llama_architecture,
    qwen2_architecture,
    gemma2_architecture,
    gemma3_architecture,
    qwen2moe_architecture,
    qwen3_architecture,
    qwen3moe_architecture,
    olmoe_architecture,
    deepseek2_architecture,
    bert_architecture,
    nomic_bert_architecture,
    mamba2_architecture,
    granite_hybrid_architecture,
    rwkv7_architecture,
    bloom_architecture,
    phi3_architecture,
    smollm3_architecture,
    granite_architecture,
    gpt_oss_architecture,
};
// clang-format on

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

const Architecture* find_architecture(std::string_view id) {
  for (const Architecture& arch : registered()) {
    if (arch.id() == id) return &arch;
  }
  return nullptr;
}

std::vector<std::string> architecture_names() {
  std::vector<std::string> names;
  for (const Architecture& arch : registered()) names.push_back(arch.id());
  return names;
}

const Architecture& architecture_for(const HParams& hp) {
  for (const Architecture& arch : registered()) {
    if (arch.name == hp.architecture && (arch.applies == nullptr || arch.applies(hp))) return arch;
  }
  // The file names: general.architecture values, each once.
  std::vector<std::string> names;
  for (const Architecture& arch : registered()) {
    if (std::find(names.begin(), names.end(), arch.name) == names.end()) names.push_back(arch.name);
  }
  fail("architecture '{}' is not supported (supported: {})", hp.architecture, fmt::join(names, ", "));
}

}  // namespace lumen::model
