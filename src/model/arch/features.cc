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
  if (f.qk_norm) refuse(arch, "QK-norm");
  if (f.post_attention_norm) refuse(arch, "a post-attention norm");
  if (f.post_ffn_norm) refuse(arch, "a post-FFN norm");
  if (f.logit_softcap != 0.0f) refuse(arch, "final logit soft-capping");
  if (f.embedding_scale) refuse(arch, "embedding scaling");
  if (f.per_layer_rope_base) refuse(arch, "a per-layer RoPE frequency base");
  if (f.ffn == FfnKind::MixtureOfExperts) refuse(arch, "a mixture-of-experts FFN");
  if (f.attention == AttentionKind::MultiHeadLatent) refuse(arch, "multi-head latent attention (MLA)");
  if (f.sliding_window == SlidingWindow::Pattern && f.sliding_window_period == 0) {
    fail("architecture '{}' declares a sliding-window pattern with period 0", arch.name);
  }
  if (f.sliding_window != SlidingWindow::None && hp.sliding_window == 0) {
    fail("architecture '{}' uses sliding-window attention but {}.attention.sliding_window is missing or 0", arch.name,
         hp.architecture);
  }
}

std::vector<int64_t> layer_sliding_windows(const Architecture& arch, const HParams& hp) {
  const BlockFeatures& f = arch.features;
  std::vector<int64_t> windows(hp.block_count, 0);
  // The clamp keeps a hostile value positive; a window that large is no window.
  const auto window =
      static_cast<int64_t>(std::min<uint64_t>(hp.sliding_window, std::numeric_limits<int64_t>::max()));
  for (uint64_t i = 0; i < hp.block_count; ++i) {
    const bool local = f.sliding_window == SlidingWindow::AllLayers ||
                       (f.sliding_window == SlidingWindow::Pattern && f.sliding_window_period != 0 &&
                        (i + 1) % f.sliding_window_period != 0);
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
