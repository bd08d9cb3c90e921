// Mixtures of experts (and DeepSeek 2's latent attention beside them).
// Part of presets() (presets.cc).
#include <array>

#include "model/preset_families.h"

namespace lumen::model {

namespace {
// Numbers from each model's published config.json. The "-mini" MoE presets keep their model's
// routing (expert count, experts per token, the shared expert's size relative to an expert's,
// head_dim, the query/KV head ratio) but are narrower (width 512), shallower (8 layers) and
// take the vocabulary of the --vocab file (vocab_size 0), so they fit in memory and run on two
// cores; no MoE GGUF small enough can be downloaded here.
constexpr std::array kExpertPresets = {
    // Qwen1.5-MoE-A2.7B (2048 wide, 24 layers, 16 heads of 128, 60 experts of 1408, top 4, a
    // shared expert of 5632 = 4 experts) at a quarter of its width.
    Preset{"qwen2moe-a2.7b-mini",
           "qwen2moe",
           8192,
           512,
           8,
           1408,
           4,
           4,
           0,
           1000000.0,
           1e-6,
           false,
           "none",
           1.0,
           0,
           128,
           0,
           60,
           4,
           352,
           1408},
    // Qwen3-30B-A3B (2048 wide, 48 layers, 32 query heads of 128 on 4 KV heads, 128 experts of
    // 768, top 8, renormalized) at a quarter of its width.
    Preset{"qwen3moe-mini", "qwen3moe", 40960, 512, 8,   1536, 8,   1, 0,   1000000.0, 1e-6,
           false,           "none",     1.0,   0,   128, 0,    128, 8, 192, 0},
    // gpt-oss-20b (2880 wide, 24 layers, 64 query heads of 64 on 8 KV heads, 32 experts of 2880,
    // top 4, windows of 128 on the even layers, YaRN x32 from 4096, rope base 150000).
    Preset{.name = "gpt-oss-20b",
           .architecture = "gpt-oss",
           .context_length = 131072,
           .embedding_length = 2880,
           .block_count = 24,
           .feed_forward_length = 2880,
           .head_count = 64,
           .head_count_kv = 8,
           .vocab_size = 201088,
           .rope_freq_base = 150000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "yarn",
           .rope_scaling_factor = 32.0,
           .rope_original_context = 4096,
           .head_dim = 64,
           .sliding_window = 128,
           .expert_count = 32,
           .expert_used_count = 4,
           .expert_feed_forward_length = 2880},
    // gpt-oss's layout at test size: 4 layers of 256, 8 query heads of 64 (a query twice the
    // embedding, as the real model's) on 2 KV heads, 16 experts of 256, top 4, windows of 32 so
    // that a test prompt crosses them, 4x sharper attention. Without its YaRN: gpt-oss's keeps
    // the correction range's fractional ends where llama.cpp rounds them (arch/gpt_oss.cc), so
    // the llama.cpp golden holds everything else and transformers holds the YaRN
    // (scripts/check_arch_transformers.py gpt_oss).
    Preset{.name = "gpt-oss-mini",
           .architecture = "gpt-oss",
           .context_length = 131072,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 256,
           .head_count = 8,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 150000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .head_dim = 64,
           .sliding_window = 32,
           .expert_count = 16,
           .expert_used_count = 4,
           .expert_feed_forward_length = 256,
           .qk_init_scale = 4.0},
    // Mixtral 8x7B (4096 wide, 32 layers, 32 query heads of 128 on 8 KV heads, 8 experts of
    // 14336, top 2) at an eighth of its width.
    // OLMoE-1B-7B (2048 wide, 16 layers, 16 heads of 128, 64 experts of 1024, top 8, not
    // renormalized) at a quarter of its width.
    Preset{"olmoe-mini", "olmoe", 4096, 512, 8,   256, 4,  4, 0, 10000.0, 1e-5,
           false,        "none",  1.0,  0,   128, 0,   64, 8, 0, 0},
    Preset{"mixtral-mini", "mixtral", 32768, 512, 8,   1792, 4, 1, 32000, 1000000.0, 1e-5,
           false,          "none",    1.0,   0,   128, 0,    8, 2, 0,     0},
    // DeepSeek-V2-Lite (2048 wide, 27 layers of which the first is dense with an FFN of 10944,
    // 16 heads, latent rank 512, per-head keys of 128 + 64 rope and values of 128, 64 experts
    // of 1408, top 6, 2 shared, softmax not renormalized) at a quarter of its width and 8
    // layers (the dense FFN rounded to 2816, whole blocks of every type); the attention keeps
    // its real per-head sizes and latent rank, which decide the cache. Without its YaRN context
    // extension.
    Preset{.name = "deepseek2-lite-mini",
           .architecture = "deepseek2",
           .context_length = 4096,
           .embedding_length = 512,
           .block_count = 8,
           .feed_forward_length = 2816,
           .head_count = 16,
           .head_count_kv = 1,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-6,
           .tied_embeddings = false,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .expert_count = 64,
           .expert_used_count = 6,
           .expert_feed_forward_length = 352,
           .kv_lora_rank = 512,
           .qk_nope_dim = 128,
           .qk_rope_dim = 64,
           .v_head_dim = 128,
           .leading_dense_blocks = 1,
           .expert_shared_count = 2},
};
}  // namespace

std::span<const Preset> expert_presets() { return kExpertPresets; }

}  // namespace lumen::model
