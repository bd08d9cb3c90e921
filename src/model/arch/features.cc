// Which block features the forward pass runs today. A feature lands here as "refused" when its
// descriptor field exists but model/transformer.cc has no code path for it yet: loading such a
// model must fail with the feature's name, never run without it.
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
    fail("architecture '{}' uses sliding-window attention but {}.attention.sliding_window is missing or 0",
         arch.name, hp.architecture);
  }
}

}  // namespace lumen::model
