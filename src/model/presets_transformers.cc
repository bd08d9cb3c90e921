// Transformers without experts: the speed presets at their published shapes (numbers from each
// model's published config.json), the test-size layouts of the logits goldens, the rope,
// KV-eviction and engine tests, and two encoders (embeddings only).
// Part of presets() (presets.cc).
#include <array>

#include "model/preset_families.h"

namespace lumen::model {

namespace {
constexpr std::array kTransformerPresets = {
    Preset{"smollm2-135m", "llama", 8192, 576, 30, 1536, 9, 3, 49152, 100000.0, 1e-5, true, "none", 1.0, 0},
    Preset{"llama-1b", "llama", 131072, 2048, 16, 8192, 32, 8, 128256, 500000.0, 1e-5, true, "llama3", 32.0, 8192},
    Preset{"llama-8b", "llama", 131072, 4096, 32, 14336, 32, 8, 128256, 500000.0, 1e-5, false, "llama3", 8.0, 8192},
    Preset{"qwen2-0.5b", "qwen2", 32768, 896, 24, 4864, 14, 2, 151936, 1000000.0, 1e-6, true, "none", 1.0, 0},
    Preset{"qwen2-7b", "qwen2", 32768, 3584, 28, 18944, 28, 4, 152064, 1000000.0, 1e-6, false, "none", 1.0, 0},
    // Qwen3-0.6B (1024 wide, 28 layers, 16 query heads of 128 on 8 KV heads, QK-norm, tied).
    Preset{"qwen3-0.6b", "qwen3", 40960, 1024, 28, 3072, 16, 8, 151936, 1000000.0, 1e-6, true, "none", 1.0, 0, 128},
    // Qwen3's layout at test size: 4 layers of 256, 4 query heads of 128 (so the query width,
    // 512, is twice the embedding's, as in every Qwen3) on 2 KV heads, the --vocab file's
    // vocabulary. QK-norm scales each head's query and key to unit RMS, so its attention is
    // sharp without a larger query/key init.
    Preset{"qwen3-mini", "qwen3", 40960, 256, 4, 768, 4, 2, 0, 1000000.0, 1e-6, true, "none", 1.0, 0, 128},
    // gemma-2-2b (2304 wide, 26 layers, 8 query heads of 256 on 4 KV heads, a 4096-position
    // window on every other layer, soft caps 50 and 30 as its converter writes them).
    Preset{.name = "gemma2-2b",
           .architecture = "gemma2",
           .context_length = 8192,
           .embedding_length = 2304,
           .block_count = 26,
           .feed_forward_length = 9216,
           .head_count = 8,
           .head_count_kv = 4,
           .vocab_size = 256000,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-6,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .head_dim = 256,
           .sliding_window = 4096,
           .attention_softcap = 50.0,
           .final_logit_softcap = 30.0},
    // Gemma 2's layout at test size: 4 layers (local, global, local, global) of 256, a
    // 16-position window, 4x sharper attention, and soft caps low enough to bend what they cap
    // (random weights make scores and logits of a few units, where caps of 50 and 30 are nearly
    // the identity): the logits golden then tests both caps, the pattern and the window.
    Preset{.name = "gemma2-mini",
           .architecture = "gemma2",
           .context_length = 2048,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 512,
           .head_count = 4,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-6,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .head_dim = 64,
           .sliding_window = 16,
           .qk_init_scale = 4.0,
           .attention_softcap = 1.5,
           .final_logit_softcap = 2.0},
    // The phi3 presets' names avoid "phi3" and "phi-3": llama.cpp sets attributes on Phi-3's
    // special tokens when a file's general.name says so, and fails on a --vocab file without them.
    // Phi-3.5-mini-instruct (3072 wide, 32 layers, 32 heads of 96, LongRoPE from 4096 to 131072
    // positions, its own output matrix).
    Preset{.name = "phi35-mini",
           .architecture = "phi3",
           .context_length = 131072,
           .embedding_length = 3072,
           .block_count = 32,
           .feed_forward_length = 8192,
           .head_count = 32,
           .head_count_kv = 32,
           .vocab_size = 32064,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "longrope",
           .rope_scaling_factor = 32.0,
           .rope_original_context = 4096},
    // Phi-4-mini-instruct (3072 wide, 32 layers, 24 query heads of 128 on 8 KV heads, rotating
    // 96 of each head's 128 dims, LongRoPE from 4096 to 131072 positions, tied embeddings).
    Preset{.name = "phi4-mini",
           .architecture = "phi3",
           .context_length = 131072,
           .embedding_length = 3072,
           .block_count = 32,
           .feed_forward_length = 8192,
           .head_count = 24,
           .head_count_kv = 8,
           .vocab_size = 200064,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "longrope",
           .rope_scaling_factor = 32.0,
           .rope_original_context = 4096,
           .head_dim = 128,
           .rope_dims = 96},
    // Phi-4-mini's layout at test size (4 layers of 256, 4 query heads of 64 on 2 KV heads,
    // 48 of 64 dims rotating, its own output matrix, 4x sharper attention) with LongRoPE from
    // an original context of 256: the logits golden runs at 1024 tokens of context, so the long
    // factors apply ...
    Preset{.name = "phi4-mini-tiny",
           .architecture = "phi3",
           .context_length = 2048,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 512,
           .head_count = 4,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "longrope",
           .rope_scaling_factor = 8.0,
           .rope_original_context = 256,
           .head_dim = 64,
           .qk_init_scale = 4.0,
           .rope_dims = 48},
    // ... and here, from an original context of 2048, the short ones.
    Preset{.name = "phi4-mini-tiny-short",
           .architecture = "phi3",
           .context_length = 16384,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 512,
           .head_count = 4,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "longrope",
           .rope_scaling_factor = 8.0,
           .rope_original_context = 2048,
           .head_dim = 64,
           .qk_init_scale = 4.0,
           .rope_dims = 48},
    // SmolLM3-3B (2048 wide, 36 layers, 16 query heads of 128 on 4 KV heads, every fourth layer
    // without rope, tied embeddings).
    Preset{"smollm3-3b", "smollm3", 65536, 2048, 36, 11008, 16, 4, 128256, 5000000.0, 1e-6, true, "none", 1.0, 0},
    // SmolLM3's layout at test size: 4 layers of 256 (the fourth without rope), 4 query heads of
    // 64 on 2 KV heads, 4x sharper attention so that which layers rotate shows in the logits.
    Preset{.name = "smollm3-mini",
           .architecture = "smollm3",
           .context_length = 65536,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 768,
           .head_count = 4,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 5000000.0,
           .norm_eps = 1e-6,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .qk_init_scale = 4.0},
    // Granite 3's dense block at test size (4 layers of 256, 4 query heads of 64 on 2 KV heads)
    // with granite-hybrid-mini's multipliers and rope on: the granite golden's model.
    Preset{.name = "granite-mini",
           .architecture = "granite",
           .context_length = 4096,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 768,
           .head_count = 4,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .qk_init_scale = 4.0,
           .embedding_scale = 12.0,
           .residual_scale = 0.246,
           .attention_scale = 0.015625,
           .logit_scale = 3.0},
    Preset{"gemma3-270m", "gemma3", 32768, 640, 18, 2048, 4, 1, 262144, 1000000.0, 1e-6, true, "none", 1.0, 0, 256,
           512},
    Preset{"gemma3-1b", "gemma3", 32768, 1152, 26, 6912, 4, 1, 262144, 1000000.0, 1e-6, true, "none", 1.0, 0, 256, 512},
    // Llama 3.1's shape and rope base (4 query heads of 64 on 2 KV heads) at an eighth of
    // Llama 3.2 1B's width, 4 layers, and an original context of 256 stretched 8 times, so
    // that a prompt of a few hundred tokens runs past the original context and the llama3
    // frequency factors fall in all three of their bands (pairs 0-5 kept, 6-9 interpolated,
    // 10-31 divided by 8): the rope-scaling golden's model. Its q and k weights are 4x the usual
    // random scale, so that attention is sharp enough for the rotation to matter.
    Preset{"llama3-mini", "llama",  2048, 256, 4, 768, 4, 2, 0, 500000.0, 1e-5,
           true,          "llama3", 8.0,  256, 0, 0,   0, 0, 0, 0,        4.0},
    // Gemma 3's layout at test size: both layers of a 2-layer file local (the pattern's global
    // layer is the sixth), a 16-position window, the test tokenizer's vocabulary, 4x sharper
    // attention, so that which keys a local layer sees shows in its logits (kv eviction's test).
    Preset{"gemma3-mini", "gemma3", 2048, 256, 6,  512, 4, 1, 0, 10000.0, 1e-6,
           true,          "none",   1.0,  0,   64, 16,  0, 0, 0, 0,       4.0},
    // bigscience/bloom-560m (1024 wide, 24 layers, 16 heads of 64, FFN 4096, its 250880-token
    // vocabulary, tied embeddings, ALiBi): the bloom speed preset.
    Preset{.name = "bloom-560m",
           .architecture = "bloom",
           .context_length = 2048,
           .embedding_length = 1024,
           .block_count = 24,
           .feed_forward_length = 4096,
           .head_count = 16,
           .head_count_kv = 16,
           .vocab_size = 250880,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0},
    // BLOOM's block at 384 wide, 4 layers, 6 heads of 64 (not a power of two: ALiBi's second
    // slope series), FFN 1536: the ALiBi golden's and the engine tests' model.
    Preset{.name = "bloom-mini",
           .architecture = "bloom",
           .context_length = 2048,
           .embedding_length = 384,
           .block_count = 4,
           .feed_forward_length = 1536,
           .head_count = 6,
           .head_count_kv = 6,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0},
    // BAAI/bge-small-en-v1.5: BERT's shape at 384 wide (an encoder: embeddings only).
    Preset{"bge-small", "bert", 512, 384, 12, 1536, 12, 12, 30522, 10000.0, 1e-12, true, "none", 1.0, 0},
    // nomic-ai/nomic-embed-text-v1.5: nomic-bert (rotary, fused QKV, SwiGLU) at 768 wide.
    Preset{"nomic-embed-v1.5", "nomic-bert", 2048, 768, 12, 3072, 12, 12, 30522, 1000.0, 1e-12, true, "none", 1.0, 0},
};
}  // namespace

std::span<const Preset> transformer_presets() { return kTransformerPresets; }

}  // namespace lumen::model
