#include "model/presets.h"

#include <array>

namespace lumen::model {

namespace {
// Numbers from each model's published config.json. The "-mini" MoE presets keep their model's
// routing (expert count, experts per token, the shared expert's size relative to an expert's,
// head_dim, the query/KV head ratio) but are narrower (width 512), shallower (8 layers) and
// take the vocabulary of the --vocab file (vocab_size 0), so they fit in memory and run on two
// cores; no MoE GGUF small enough can be downloaded here.
constexpr std::array kPresets = {
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
    Preset{"smollm3-3b", "smollm3", 65536, 2048, 36, 11008, 16, 4, 128256, 5000000.0, 1e-6, true,
           "none", 1.0, 0},
    // SmolLM3's layout at test size: 4 layers of 256 (the fourth without rope), 4 query heads of
    // 64 on 2 KV heads, 4x sharper attention so that which layers rotate shows in the logits.
    Preset{"smollm3-mini", "smollm3", 65536, 256, 4, 768, 4, 2, 0, 5000000.0, 1e-6, true,
           "none", 1.0, 0, 0, 0, 0, 0, 0, 0, 4.0},
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
    // BAAI/bge-small-en-v1.5: BERT's shape at 384 wide (an encoder: embeddings only).
    Preset{"bge-small", "bert", 512, 384, 12, 1536, 12, 12, 30522, 10000.0, 1e-12, true, "none", 1.0, 0},
    // nomic-ai/nomic-embed-text-v1.5: nomic-bert (rotary, fused QKV, SwiGLU) at 768 wide.
    Preset{"nomic-embed-v1.5", "nomic-bert", 2048, 768, 12, 3072, 12, 12, 30522, 1000.0, 1e-12, true, "none", 1.0, 0},
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
    // state-spaces/mamba2-130m (768 wide, 24 layers, inner 1536 in 24 heads of 64, state 128,
    // one group, kernel 4, no attention or FFN, tied embeddings).
    Preset{.name = "mamba2-130m",
           .architecture = "mamba2",
           .context_length = 1048576,
           .embedding_length = 768,
           .block_count = 24,
           .feed_forward_length = 0,
           .head_count = 0,
           .head_count_kv = 0,
           .vocab_size = 50288,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .ssm_conv_kernel = 4,
           .ssm_inner_size = 1536,
           .ssm_state_size = 128,
           .ssm_head_count = 24,
           .ssm_group_count = 1},
    // The same block at a third of its width and 4 layers, with two groups of B and C (so the
    // gated norm is a group norm): the state-space golden's model.
    Preset{.name = "mamba2-mini",
           .architecture = "mamba2",
           .context_length = 1048576,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 0,
           .head_count = 0,
           .head_count_kv = 0,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .ssm_conv_kernel = 4,
           .ssm_inner_size = 512,
           .ssm_state_size = 64,
           .ssm_head_count = 8,
           .ssm_group_count = 2},
    // Granite 4.0-H at its 350M size as we recall its config (768 wide, 32 layers, every 8th
    // attending with 12 heads over 4 KV heads and no rope, FFN 2048, Mamba 2 inner 1536 in 48
    // heads of 32, state 128, one group, kernel 4, Granite's multipliers): the hybrid's speed
    // preset. The shape is what the benchmark needs; the exact published numbers may differ.
    Preset{.name = "granite-hybrid-350m",
           .architecture = "granitehybrid",
           .context_length = 32768,
           .embedding_length = 768,
           .block_count = 32,
           .feed_forward_length = 2048,
           .head_count = 12,
           .head_count_kv = 4,
           .vocab_size = 100352,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .ssm_conv_kernel = 4,
           .ssm_inner_size = 1536,
           .ssm_state_size = 128,
           .ssm_head_count = 48,
           .ssm_group_count = 1,
           .attention_period = 8,
           .embedding_scale = 12.0,
           .residual_scale = 0.246,
           .attention_scale = 0.015625,
           .logit_scale = 3.0,
           .no_rope = true},
    // The same block at 256 wide and 4 layers, every second one attending (4 heads of 64 over
    // 2 KV heads), Mamba 2 layers as mamba2-mini's (two groups): the hybrid golden's model.
    Preset{.name = "granite-hybrid-mini",
           .architecture = "granitehybrid",
           .context_length = 32768,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 512,
           .head_count = 4,
           .head_count_kv = 2,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = true,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .ssm_conv_kernel = 4,
           .ssm_inner_size = 512,
           .ssm_state_size = 64,
           .ssm_head_count = 8,
           .ssm_group_count = 2,
           .attention_period = 2,
           .embedding_scale = 12.0,
           .residual_scale = 0.246,
           .attention_scale = 0.015625,
           .logit_scale = 3.0,
           .no_rope = true},
    // RWKV7-Goose 0.1B (fla-hub/rwkv7-191M-world's config.json as we recall it: 768 wide, 12
    // layers, heads of 64, FFN 3072, LoRA ranks 64 (decay), 64 (a), 32 (value residual) and
    // 128 (gate), the 65536-token world vocabulary, its own output head): the speed preset.
    Preset{.name = "rwkv7-0.1b",
           .architecture = "rwkv7",
           .context_length = 1048576,
           .embedding_length = 768,
           .block_count = 12,
           .feed_forward_length = 3072,
           .head_count = 0,
           .head_count_kv = 0,
           .vocab_size = 65536,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .wkv_head_size = 64,
           .rwkv_decay_lora = 64,
           .rwkv_iclr_lora = 64,
           .rwkv_value_lora = 32,
           .rwkv_gate_lora = 128},
    // The same block at 256 wide (4 heads of 64) and 4 layers, ranks of 32 (gate 64): the RWKV
    // golden's model.
    Preset{.name = "rwkv7-mini",
           .architecture = "rwkv7",
           .context_length = 1048576,
           .embedding_length = 256,
           .block_count = 4,
           .feed_forward_length = 1024,
           .head_count = 0,
           .head_count_kv = 0,
           .vocab_size = 0,
           .rope_freq_base = 10000.0,
           .norm_eps = 1e-5,
           .tied_embeddings = false,
           .rope_scaling = "none",
           .rope_scaling_factor = 1.0,
           .rope_original_context = 0,
           .wkv_head_size = 64,
           .rwkv_decay_lora = 32,
           .rwkv_iclr_lora = 32,
           .rwkv_value_lora = 32,
           .rwkv_gate_lora = 64},
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
};
}  // namespace

std::span<const Preset> presets() { return kPresets; }

const Preset* find_preset(std::string_view name) {
  for (const Preset& preset : kPresets) {
    if (preset.name == name) return &preset;
  }
  return nullptr;
}

std::vector<bool> preset_ssm_layers(const Preset& p, uint64_t layers) {
  std::vector<bool> ssm;
  if (p.attention_period == 0 || p.ssm_inner_size == 0) return ssm;
  for (uint64_t i = 0; i < layers; ++i) ssm.push_back((i + 1) % p.attention_period != 0);
  return ssm;
}

}  // namespace lumen::model
