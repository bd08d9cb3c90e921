// SmolLM3 (general.architecture "smollm3", SmolLM3-3B): llama's block, adjacent-pair rope (the
// converter permutes Q and K as for llama), and every fourth layer without rope (NoPE: layers 3,
// 7, 11, ...), which llama.cpp fixes at 4 whatever the file says.
#include "model/arch/llama.h"

namespace lumen::model {

Architecture smollm3_architecture() {
  Architecture arch;
  arch.name = "smollm3";
  arch.features.rope_neox = false;
  arch.features.no_rope_period = 4;
  arch.features.sliding_window = SlidingWindow::None;
  arch.tensors = llama_tensors();
  return arch;
}

}  // namespace lumen::model
