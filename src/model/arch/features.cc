// Which block features the forward pass runs today. A feature lands here as "refused" when its
// descriptor field exists but model/transformer.cc has no code path for it yet: loading such a
// model must fail with the feature's name, never run without it. Also: which layers attend
// through a sliding window.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "model/arch/architecture.h"
#include "util/error.h"

namespace lumen::model {

namespace {

void refuse(const Architecture& arch, const char* feature) {
  fail("architecture '{}' needs {}, which Lumen's forward pass does not implement yet", arch.name, feature);
}

}  // namespace

void require_supported_features(const Architecture& arch, const HParams& hp) {
  const BlockFeatures& f = arch.features;
  if (f.ffn == FfnKind::MixtureOfExperts && hp.expert_count == 0) {
    fail("architecture '{}' is a mixture of experts but {}.expert_count is missing or 0", arch.name, hp.architecture);
  }
  if (f.attention == AttentionKind::MultiHeadLatent && !is_mla(hp)) {
    fail("this {} file has the older multi-head latent attention layout (one attn_kv_b matrix, no "
         "{}.attention.key_length_mla / value_length_mla); Lumen reads the split attn_k_b / attn_v_b layout "
         "that llama.cpp's converter writes since mid-2025: convert the model again",
         arch.name, hp.architecture);
  }
  if (f.attention == AttentionKind::MultiHeadLatent && f.sliding_window != SlidingWindow::None) {
    refuse(arch, "multi-head latent attention with a sliding window");
  }
  if (f.mixer == Mixer::Mamba2 && !has_ssm(hp)) {
    fail("architecture '{}' has state-space layers but {}.ssm.inner_size is missing or 0", arch.name, hp.architecture);
  }
  if (f.mixer == Mixer::Mamba2 && !hp.attention_free) {
    refuse(arch, "attention heads beside its Mamba 2 layers (a hybrid)");
  }
  if (f.mixer == Mixer::Rwkv7 && (!has_rwkv(hp) || !hp.attention_free)) {
    fail("architecture '{}' needs {}.wkv.head_size and attention.head_count = 0", arch.name, hp.architecture);
  }
  if (f.mixer != Mixer::Rwkv7 && has_rwkv(hp)) {
    fail("architecture '{}' has no RWKV layers, but the file gives {}.wkv.head_size", arch.name, hp.architecture);
  }
  if (f.mixer == Mixer::HybridMamba2 && !is_hybrid(hp)) {
    fail(
        "architecture '{}' mixes attention and Mamba 2 layers, but the file marks none (a 0 in a per-layer "
        "{}.attention.head_count_kv, with {}.ssm.inner_size)",
        arch.name, hp.architecture, hp.architecture);
  }
  if (f.mixer != Mixer::HybridMamba2 && !hp.ssm_layers.empty()) {
    refuse(arch, "Mamba 2 layers among its attention layers (a hybrid)");
  }
  // Else a state cache would be sized (and allocated per sequence) for layers that never run.
  if (f.mixer == Mixer::Attention && has_ssm(hp)) {
    fail("architecture '{}' has no state-space layers, but the file gives {}.ssm.inner_size", arch.name,
         hp.architecture);
  }
  if (f.mixer == Mixer::Attention && hp.attention_free) {
    fail("architecture '{}' attends, but {}.attention.head_count is 0", arch.name, hp.architecture);
  }
  if (f.sliding_window == SlidingWindow::Pattern && f.sliding_window_period == 0) {
    fail("architecture '{}' declares a sliding-window pattern with period 0", arch.name);
  }
  if (f.sliding_window != SlidingWindow::None && hp.sliding_window == 0) {
    fail("architecture '{}' uses sliding-window attention but {}.attention.sliding_window is missing or 0", arch.name,
         hp.architecture);
  }
}

Softcaps resolved_softcaps(const Architecture& arch, const HParams& hp) {
  const BlockFeatures& f = arch.features;
  Softcaps caps{f.attention_softcap, f.logit_softcap};
  // validate_hparams holds both keys to finite, non-negative values; 0 (or absent) keeps the
  // architecture's own, as llama.cpp keeps its default when the key is missing.
  if (f.attention_softcap_from_file && hp.attention_softcap != 0.0) {
    caps.attention = static_cast<float>(hp.attention_softcap);
  }
  if (f.logit_softcap_from_file && hp.final_logit_softcap != 0.0) {
    caps.final_logits = static_cast<float>(hp.final_logit_softcap);
  }
  return caps;
}

std::vector<int64_t> layer_sliding_windows(const Architecture& arch, const HParams& hp) {
  const BlockFeatures& f = arch.features;
  std::vector<int64_t> windows(hp.block_count, 0);
  // The clamp keeps a hostile value positive; a window that large is no window.
  const auto window =
      static_cast<int64_t>(std::min<uint64_t>(hp.sliding_window, std::numeric_limits<int64_t>::max()));
  // The file's pattern, when it has one, over the architecture's (validate_hparams checked
  // that a list of flags has one per layer). Period 0 from a file: every layer local.
  const uint64_t period = hp.sliding_window_period.value_or(f.sliding_window_period);
  const bool per_layer_flags = hp.sliding_window_layers.size() == hp.block_count;
  for (uint64_t i = 0; i < hp.block_count; ++i) {
    bool local = f.sliding_window == SlidingWindow::AllLayers;
    if (f.sliding_window == SlidingWindow::Pattern) {
      local = per_layer_flags ? hp.sliding_window_layers[i] : period == 0 || (i + 1) % period != 0;
    }
    if (local) windows[i] = window;
  }
  if (f.sliding_window == SlidingWindow::None && hp.sliding_window != 0) {
    // Said once per load rather than refused: Mistral's llama files carry the key, and
    // llama.cpp, whose logits the tests compare against, ignores it for these architectures.
    fmt::print(stderr,
               "lumen: ignoring {}.attention.sliding_window = {}: the {} architecture attends to every position\n",
               hp.architecture, hp.sliding_window, hp.architecture);
  }
  return windows;
}

}  // namespace lumen::model
