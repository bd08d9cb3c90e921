#include "model/arch/architecture.h"
#include "model/arch/llama.h"
#include "util/error.h"

namespace lumen::model {

ArchitectureConfig architecture_for(const HParams& hp) {
  if (hp.architecture == "llama") return llama_config(hp);
  if (hp.architecture == "qwen2") return qwen2_config(hp);
  fail("architecture '{}' is not supported (supported: llama, qwen2)", hp.architecture);
}

}  // namespace lumen::model
