#include "model/synth.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numbers>
#include <filesystem>
#include <thread>

#include "gguf/file.h"
#include "gguf/writer.h"
#include "model/arch/architecture.h"
#include "model/presets.h"
#include "quantize/model_facts.h"
#include "quantize/quantize_order.h"
#include "quantize/tensor_type_rules.h"
#include "tensor/quantize.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using tensor::DType;

// splitmix64: a tiny, well-mixed generator; seeded per row so the output does not depend on
// how rows are split across threads.
struct SplitMix {
  uint64_t state;
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
};

// Decay: -1 .. -16 uniformly (Mamba's A = -exp(A_log), A_log initialized as log(1 .. 16));
// Wide: a convolution tap's scale (trained depthwise taps are O(0.1 .. 1), not O(0.02)).
enum class Init { Normal, NearOne, Small, Decay, Wide };

struct TensorPlan {
  std::string name;
  DType type;
  bool matrix = false;  // a weight matrix (TensorRole::Matrix): the one kind a mixture types
  std::vector<int64_t> dims;
  Init init;
  std::vector<float> fixed;  // exact values instead of random ones (F32 only)
  double scale = 1.0;        // times the init's own scale (the preset's qk_init_scale)
};

// Bell-shaped values from one 64-bit draw: the sum of its four 16-bit parts (Irwin-Hall, n = 4)
// has mean 2 and variance 1/3 in units of 2^16. Random weights need the shape and the scale of
// trained ones, not exact Gaussian tails, and this is ~10x cheaper than Box-Muller: synthesizing
// an 8B model is bounded by the disk, not by the generator.
void fill_row(SplitMix& rng, Init init, double multiplier, std::span<float> row) {
  constexpr double kToUnitVariance = 1.7320508075688772 / 65536.0;  // sqrt(3) / 2^16
  if (init == Init::Decay) {
    for (float& value : row) value = static_cast<float>(-(1.0 + 15.0 * rng.uniform()));
    return;
  }
  const double base = init == Init::Normal ? 0.02 : init == Init::NearOne ? 0.05 : init == Init::Wide ? 0.3 : 0.01;
  const double scale = base * multiplier;
  const double offset = init == Init::NearOne ? 1.0 : 0.0;
  for (float& value : row) {
    uint64_t bits = rng.next();
    double sum = static_cast<double>((bits & 0xffff) + ((bits >> 16) & 0xffff) +
                                     ((bits >> 32) & 0xffff) + (bits >> 48));
    value = static_cast<float>(offset + scale * (sum - 131070.0) * kToUnitVariance);
  }
}

// Fills `out` with the quantized rows of a random tensor, rows split across threads.
void fill_tensor(const TensorPlan& plan, uint64_t seed, uint64_t index, unsigned threads,
                 std::span<uint8_t> out) {
  if (!plan.fixed.empty()) {
    std::memcpy(out.data(), plan.fixed.data(), out.size());
    return;
  }
  const int64_t row_len = plan.dims[0];
  const int64_t rows = static_cast<int64_t>(out.size() / *tensor::row_bytes(plan.type, row_len));
  const size_t row_bytes = static_cast<size_t>(*tensor::row_bytes(plan.type, row_len));
  auto worker = [&](int64_t first, int64_t last) {
    std::vector<float> row(static_cast<size_t>(row_len));
    for (int64_t r = first; r < last; ++r) {
      SplitMix rng{seed ^ (index << 40) ^ static_cast<uint64_t>(r) * 0x2545f4914f6cdd1dULL};
      fill_row(rng, plan.init, plan.scale, row);
      tensor::quantize_row(plan.type, row.data(), out.data() + static_cast<size_t>(r) * row_bytes,
                           row_len);
    }
  };
  unsigned n = std::max(1u, std::min<unsigned>(threads, static_cast<unsigned>(rows)));
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < n; ++t) {
    pool.emplace_back(worker, rows * t / n, rows * (t + 1) / n);
  }
  for (auto& thread : pool) thread.join();
}

// general.file_type uses llama.cpp's llama_ftype numbering, which is not the tensor type id.
uint32_t llama_file_type(DType type) {
  switch (type) {
    case DType::F32: return 0;
    case DType::F16: return 1;
    case DType::Q4_0: return 2;
    case DType::Q4_1: return 3;
    case DType::Q8_0: return 7;
    case DType::Q5_0: return 8;
    case DType::Q5_1: return 9;
    case DType::Q2_K: return 10;
    case DType::Q3_K: return 12;  // Q3_K_M
    case DType::Q4_K: return 15;  // Q4_K_M
    case DType::Q5_K: return 17;  // Q5_K_M
    case DType::Q6_K: return 18;
    case DType::IQ4_NL: return 25;
    case DType::IQ4_XS: return 30;
    case DType::BF16: return 32;
    default: fail("no llama.cpp file type for {}", tensor::dtype_name(type));
  }
}

// llama.cpp's fallbacks when a row is not whole 256-element super-blocks.
DType compatible_type(DType wanted, int64_t row_len) {
  if (tensor::row_bytes(wanted, row_len)) return wanted;
  switch (wanted) {
    case DType::Q2_K: case DType::Q3_K: return DType::Q4_0;
    case DType::Q4_K: return DType::Q5_0;
    case DType::Q5_K: return DType::Q5_1;
    case DType::IQ4_XS: return DType::IQ4_NL;
    default: return DType::Q8_0;
  }
}

// The hyperparameters the synthetic file's metadata describes, for the descriptor's shapes.
HParams preset_hparams(const Preset& p, uint64_t layers, uint64_t n_vocab) {
  HParams hp;
  hp.architecture = std::string(p.architecture);
  hp.context_length = p.context_length;
  hp.embedding_length = p.embedding_length;
  hp.block_count = layers;
  hp.feed_forward_length = p.feed_forward_length;
  hp.head_count = p.head_count;
  hp.head_count_kv = p.head_count_kv;
  hp.head_dim = p.head_dim != 0 ? p.head_dim : p.head_count == 0 ? 0 : p.embedding_length / p.head_count;
  hp.value_dim = hp.head_dim;
  hp.vocab_size = n_vocab;
  hp.rope_freq_base = p.rope_freq_base;
  hp.rope_dimension_count = p.rope_dims != 0 ? p.rope_dims : hp.head_dim;
  hp.norm_eps = p.norm_eps;
  hp.sliding_window = p.sliding_window;
  hp.expert_count = p.expert_count;
  hp.expert_used_count = p.expert_used_count;
  hp.expert_feed_forward_length = p.expert_feed_forward_length;
  hp.expert_shared_feed_forward_length = p.expert_shared_feed_forward_length;
  if (p.kv_lora_rank != 0) {  // latent attention: what llama.cpp's converter writes
    hp.q_lora_rank = p.q_lora_rank;
    hp.kv_lora_rank = p.kv_lora_rank;
    hp.key_length_mla = p.qk_nope_dim + p.qk_rope_dim;
    hp.value_length_mla = p.v_head_dim;
    hp.head_dim = p.kv_lora_rank + p.qk_rope_dim;
    hp.value_dim = p.kv_lora_rank;
    hp.rope_dimension_count = p.qk_rope_dim;
  }
  hp.leading_dense_block_count = std::min(p.leading_dense_blocks, layers);
  hp.expert_shared_count = p.expert_shared_count;
  hp.ssm_conv_kernel = p.ssm_conv_kernel;
  hp.ssm_inner_size = p.ssm_inner_size;
  hp.ssm_state_size = p.ssm_state_size;
  hp.ssm_head_count = p.ssm_head_count;
  hp.ssm_group_count = p.ssm_group_count;
  hp.ssm_layers = preset_ssm_layers(p, layers);
  hp.wkv_head_size = p.wkv_head_size;
  hp.rwkv_decay_lora = p.rwkv_decay_lora;
  hp.rwkv_iclr_lora = p.rwkv_iclr_lora;
  hp.rwkv_value_lora = p.rwkv_value_lora;
  hp.rwkv_gate_lora = p.rwkv_gate_lora;
  return hp;
}

// The attention projections whose product is a score (the preset's qk_init_scale scales them).
bool is_query_or_key(const TensorSpec& spec) { return spec.name == "attn_q.weight" || spec.name == "attn_k.weight"; }

// Whether the preset's model has an optional tensor.
bool preset_has(const Preset& p, Presence presence) {
  switch (presence) {
    case Presence::Required: return true;
    case Presence::Untied: return !p.tied_embeddings;
    case Presence::RopeScaling: return p.rope_scaling == "llama3";
    case Presence::LongRope: return p.rope_scaling == "longrope";
    case Presence::Optional: return false;
  }
  return false;
}

// Every tensor the preset's architecture declares, in its declared order (a run of per-layer
// tensors once per layer), so the file reads like one llama.cpp's converter writes.
std::vector<TensorPlan> plan_tensors(const Preset& p, const HParams& hp, DType type, bool q4_k_m,
                                     SynthReport& report) {
  const Architecture* arch = find_architecture(p.architecture);
  if (arch == nullptr) fail("preset '{}' names unknown architecture '{}'", p.name, p.architecture);
  std::vector<TensorPlan> plans;
  auto plan = [&](const TensorSpec& spec, const std::string& name) {
    std::vector<int64_t> dims = spec.dims(hp);
    switch (spec.role) {
      case TensorRole::Matrix: {
        // A mixture's types come later (apply_q4_k_m), when every tensor's name is known.
        DType chosen = q4_k_m ? type : compatible_type(type, dims[0]);
        if (chosen != type) {
          report.substitutions.push_back(fmt::format("{}: {} rows of {} are not whole blocks, using {}", name,
                                                     tensor::dtype_name(type), dims[0], tensor::dtype_name(chosen)));
        }
        plans.push_back(
            {name, chosen, true, std::move(dims), Init::Normal, {}, is_query_or_key(spec) ? p.qk_init_scale : 1.0});
        break;
      }
      case TensorRole::Router: plans.push_back({name, DType::F32, false, std::move(dims), Init::Normal, {}}); break;
      case TensorRole::Norm: plans.push_back({name, DType::F32, false, std::move(dims), Init::NearOne, {}}); break;
      case TensorRole::Bias: plans.push_back({name, DType::F32, false, std::move(dims), Init::Small, {}}); break;
      case TensorRole::SsmDecay: plans.push_back({name, DType::F32, false, std::move(dims), Init::Decay, {}}); break;
      case TensorRole::SsmConv: plans.push_back({name, DType::F32, false, std::move(dims), Init::Wide, {}}); break;
      case TensorRole::RopeFactors:
        plans.push_back({name, DType::F32, false, std::move(dims), Init::Normal,
                         spec.presence == Presence::LongRope
                             ? longrope_factors(p, static_cast<int64_t>(hp.rope_dimension_count),
                                                spec.name == "rope_factors_long.weight")
                             : llama3_rope_factors(p, static_cast<int64_t>(hp.head_dim))});
        break;
    }
  };
  const std::vector<TensorSpec>& specs = arch->tensors;
  for (size_t i = 0; i < specs.size();) {
    if (!specs[i].per_layer()) {
      if (preset_has(p, specs[i].presence)) plan(specs[i], specs[i].file_name(0));
      ++i;
      continue;
    }
    size_t run_end = i;
    while (run_end < specs.size() && specs[run_end].per_layer()) ++run_end;
    for (uint64_t layer = 0; layer < hp.block_count; ++layer) {
      for (size_t j = i; j < run_end; ++j) {
        if (preset_has(p, specs[j].presence) && specs[j].declared_for(hp, layer)) {
          plan(specs[j], specs[j].file_name(layer));
        }
      }
    }
    i = run_end;
  }
  return plans;
}

// llama.cpp's Q4_K_M mixture over the planned matrices, chosen by the rules `lumen quantize`
// follows (quantize/tensor_type_rules.h), visiting the tensors in llama-quantize's order: Q6_K
// for the output (and for token_embd when it doubles as the output), for attn_v and ffn_down in
// the layers llama.cpp favours; Q4_K elsewhere; and its fallbacks where rows are not whole
// super-blocks (Gemma 3 270M's 640-wide rows: Q5_0, and Q8_0 for the tied embedding). So a
// preset in a real model's shapes is typed as that model's Q4_K_M file is.
void apply_q4_k_m(std::vector<TensorPlan>& plans, const gguf::Metadata& md, SynthReport& report) {
  std::vector<std::string> names;
  for (const TensorPlan& plan : plans) names.push_back(plan.name);
  quantize::TypeChoiceOptions choice;
  choice.mix = quantize::Mix::Q4_K_M;
  quantize::TensorTypePlanner planner(quantize::model_facts(md, names), choice);
  std::vector<TensorPlan*> order;
  for (TensorPlan& plan : plans) order.push_back(&plan);
  std::stable_sort(order.begin(), order.end(), [](const TensorPlan* a, const TensorPlan* b) {
    return quantize::quantize_order_before(a->name, b->name);
  });
  for (TensorPlan* plan : order) {
    // What stays unquantized in a real file stays F32 here.
    if (plan->matrix) plan->type = planner.choose(plan->name, DType::F32, plan->dims);
  }
  for (const std::string& line : planner.fallbacks()) report.substitutions.push_back(line);
}

// Copies tokenizer.* from the vocabulary file, padding the token list with unused tokens up to
// the preset's vocabulary size so embedding shapes match the real model's.
uint64_t copy_vocab(const gguf::GgufFile& source, uint64_t preset_vocab, gguf::Metadata& out) {
  const gguf::Metadata& md = source.metadata();
  const auto& tokens = md.get_array("tokenizer.ggml.tokens", gguf::ValueType::STRING);
  const uint64_t n_vocab = std::max<uint64_t>(preset_vocab, tokens.length);
  const uint64_t pad = n_vocab - tokens.length;
  for (const auto& [key, value] : md.entries()) {
    if (key.rfind("tokenizer.", 0) != 0) continue;
    if (pad == 0 || value.type() != gguf::ValueType::ARRAY ||
        value.as_array().length != tokens.length) {
      out.set(key, value);
      continue;
    }
    gguf::Array padded = value.as_array();
    padded.length = n_vocab;
    if (key == "tokenizer.ggml.tokens") {
      for (uint64_t i = 0; i < pad; ++i) padded.strings.push_back(fmt::format("<|synth_pad_{}|>", i));
    } else if (key == "tokenizer.ggml.token_type") {
      const int32_t unused = 5;
      for (uint64_t i = 0; i < pad; ++i) {
        const auto* bytes = reinterpret_cast<const uint8_t*>(&unused);
        padded.raw.insert(padded.raw.end(), bytes, bytes + sizeof(unused));
      }
    } else if (!padded.raw.empty()) {
      padded.raw.resize(padded.raw.size() / tokens.length * n_vocab, 0);  // scores: 0
    } else {
      out.set(key, value);  // an unrelated array that happens to match the length
      continue;
    }
    out.set(key, gguf::Value::of_array(std::move(padded)));
  }
  return n_vocab;
}

// A hybrid's layer kinds and Granite's multipliers, as llama.cpp's converter writes them: the
// per-layer KV head counts replace the scalar (0: a Mamba 2 layer).
void write_hybrid_metadata(const Preset& p, uint64_t layers, const std::string& arch, gguf::Metadata& md) {
  auto key = [&](const char* suffix) { return arch + "." + suffix; };
  const std::vector<bool> ssm = preset_ssm_layers(p, layers);
  if (!ssm.empty()) {
    std::vector<int32_t> kv_heads;
    for (bool mamba : ssm) kv_heads.push_back(mamba ? 0 : static_cast<int32_t>(p.head_count_kv));
    md.set(key("attention.head_count_kv"), gguf::Value::i32_array(kv_heads));
  }
  if (p.embedding_scale != 0.0) md.set(key("embedding_scale"), gguf::Value::f32(static_cast<float>(p.embedding_scale)));
  if (p.residual_scale != 0.0) md.set(key("residual_scale"), gguf::Value::f32(static_cast<float>(p.residual_scale)));
  if (p.attention_scale != 0.0) md.set(key("attention.scale"), gguf::Value::f32(static_cast<float>(p.attention_scale)));
  if (p.logit_scale != 0.0) md.set(key("logit_scale"), gguf::Value::f32(static_cast<float>(p.logit_scale)));
  if (p.no_rope) md.set(key("rope.scaling.finetuned"), gguf::Value::of_bool(false));
}

}  // namespace

SynthReport write_synthetic_model(const SynthOptions& options, const std::string& out_path) {
  const Preset* preset = find_preset(options.preset);
  if (preset == nullptr) {
    std::string names;
    for (const Preset& p : presets()) names += fmt::format("{}{}", names.empty() ? "" : ", ", p.name);
    fail("unknown preset '{}' (known: {})", options.preset, names);
  }
  if (!tensor::has_reference_kernels(options.type) || options.type == DType::Q8_K ||
      options.type == DType::Q8_1) {
    fail("cannot synthesize weights of type {}", tensor::dtype_name(options.type));
  }
  if (options.type == DType::MXFP4) fail("MXFP4 is an experts' type: use the MXFP4_MOE mixture");
  const uint64_t layers = options.block_count.value_or(preset->block_count);
  if (layers == 0 || layers > preset->block_count) {
    fail("--layers must be between 1 and {}", preset->block_count);
  }
  if (options.vocab_path.empty()) fail("a vocabulary GGUF (--vocab) is required");
  gguf::GgufFile vocab_source = gguf::GgufFile::open(options.vocab_path);
  const Architecture* architecture = find_architecture(preset->architecture);
  if (architecture == nullptr) fail("preset '{}' names unknown architecture '{}'", preset->name, preset->architecture);

  SynthReport report;
  gguf::GgufWriter writer;
  gguf::Metadata& md = writer.metadata();
  const std::string arch = architecture->name;  // a variant ("mixtral") is its file architecture's
  auto key = [&](const char* suffix) { return arch + "." + suffix; };
  md.set("general.architecture", gguf::Value::of_string(arch));
  md.set("general.name", gguf::Value::of_string(fmt::format("lumen synthetic {}", preset->name)));
  md.set("general.file_type", gguf::Value::u32(llama_file_type(options.type)));
  md.set(key("context_length"), gguf::Value::u32(static_cast<uint32_t>(preset->context_length)));
  md.set(key("embedding_length"), gguf::Value::u32(static_cast<uint32_t>(preset->embedding_length)));
  md.set(key("block_count"), gguf::Value::u32(static_cast<uint32_t>(layers)));
  md.set(key("feed_forward_length"),
         gguf::Value::u32(static_cast<uint32_t>(preset->feed_forward_length)));
  md.set(key("attention.head_count"), gguf::Value::u32(static_cast<uint32_t>(preset->head_count)));
  // An attention-free preset (Mamba 2) writes head_count 0 only, as llama.cpp's converter does.
  if (preset->head_count != 0) {
    md.set(key("attention.head_count_kv"), gguf::Value::u32(static_cast<uint32_t>(preset->head_count_kv)));
  }
  write_hybrid_metadata(*preset, layers, arch, md);
  if (preset->ssm_inner_size != 0) {
    md.set(key("ssm.conv_kernel"), gguf::Value::u32(static_cast<uint32_t>(preset->ssm_conv_kernel)));
    md.set(key("ssm.inner_size"), gguf::Value::u32(static_cast<uint32_t>(preset->ssm_inner_size)));
    md.set(key("ssm.state_size"), gguf::Value::u32(static_cast<uint32_t>(preset->ssm_state_size)));
    md.set(key("ssm.time_step_rank"), gguf::Value::u32(static_cast<uint32_t>(preset->ssm_head_count)));
    md.set(key("ssm.group_count"), gguf::Value::u32(static_cast<uint32_t>(preset->ssm_group_count)));
  }
  md.set(key("rope.freq_base"), gguf::Value::f32(static_cast<float>(preset->rope_freq_base)));
  if (preset->wkv_head_size != 0) {  // RWKV 7: LayerNorms, as llama.cpp's converter writes it
    md.set(key("attention.layer_norm_epsilon"), gguf::Value::f32(static_cast<float>(preset->norm_eps)));
    md.set(key("wkv.head_size"), gguf::Value::u32(static_cast<uint32_t>(preset->wkv_head_size)));
    md.set(key("attention.decay_lora_rank"), gguf::Value::u32(static_cast<uint32_t>(preset->rwkv_decay_lora)));
    md.set(key("attention.iclr_lora_rank"), gguf::Value::u32(static_cast<uint32_t>(preset->rwkv_iclr_lora)));
    md.set(key("attention.value_residual_mix_lora_rank"),
           gguf::Value::u32(static_cast<uint32_t>(preset->rwkv_value_lora)));
    md.set(key("attention.gate_lora_rank"), gguf::Value::u32(static_cast<uint32_t>(preset->rwkv_gate_lora)));
    md.set(key("token_shift_count"), gguf::Value::u32(2));
  } else {
    // LayerNorm architectures (BLOOM) carry the LayerNorm key, which llama.cpp requires of them.
    md.set(key(architecture->features.layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon"),
           gguf::Value::f32(static_cast<float>(preset->norm_eps)));
  }
  if (preset->head_dim != 0) {
    md.set(key("attention.key_length"), gguf::Value::u32(static_cast<uint32_t>(preset->head_dim)));
    md.set(key("attention.value_length"), gguf::Value::u32(static_cast<uint32_t>(preset->head_dim)));
  }
  if (preset->kv_lora_rank != 0) {
    const HParams mla = preset_hparams(*preset, layers, 0);
    md.set(key("attention.key_length"), gguf::Value::u32(static_cast<uint32_t>(mla.head_dim)));
    md.set(key("attention.value_length"), gguf::Value::u32(static_cast<uint32_t>(mla.value_dim)));
    md.set(key("attention.key_length_mla"), gguf::Value::u32(static_cast<uint32_t>(mla.key_length_mla)));
    md.set(key("attention.value_length_mla"), gguf::Value::u32(static_cast<uint32_t>(mla.value_length_mla)));
    md.set(key("attention.kv_lora_rank"), gguf::Value::u32(static_cast<uint32_t>(mla.kv_lora_rank)));
    // Written even when 0 (one query matrix): llama.cpp requires the key unless the layer count
    // is one of DeepSeek-V2-Lite's.
    md.set(key("attention.q_lora_rank"), gguf::Value::u32(static_cast<uint32_t>(mla.q_lora_rank)));
    md.set(key("rope.dimension_count"), gguf::Value::u32(static_cast<uint32_t>(mla.rope_dimension_count)));
    md.set(key("leading_dense_block_count"), gguf::Value::u32(static_cast<uint32_t>(mla.leading_dense_block_count)));
    md.set(key("expert_shared_count"), gguf::Value::u32(static_cast<uint32_t>(mla.expert_shared_count)));
  }
  if (preset->rope_dims != 0) {
    md.set(key("rope.dimension_count"), gguf::Value::u32(static_cast<uint32_t>(preset->rope_dims)));
  }
  if (preset->rope_scaling == "yarn") {  // what llama.cpp's gpt-oss converter writes
    md.set(key("rope.scaling.type"), gguf::Value::of_string("yarn"));
    md.set(key("rope.scaling.factor"), gguf::Value::f32(static_cast<float>(preset->rope_scaling_factor)));
    md.set(key("rope.scaling.original_context_length"),
           gguf::Value::u32(static_cast<uint32_t>(preset->rope_original_context)));
  }
  if (preset->rope_scaling == "longrope") {  // what llama.cpp's phi3 converter writes
    md.set(key("rope.scaling.original_context_length"),
           gguf::Value::u32(static_cast<uint32_t>(preset->rope_original_context)));
    md.set(key("rope.scaling.attn_factor"), gguf::Value::f32(static_cast<float>(longrope_attn_factor(*preset))));
  }
  if (preset->sliding_window != 0) {
    md.set(key("attention.sliding_window"), gguf::Value::u32(static_cast<uint32_t>(preset->sliding_window)));
  }
  if (preset->attention_softcap != 0.0) {
    md.set(key("attn_logit_softcapping"), gguf::Value::f32(static_cast<float>(preset->attention_softcap)));
  }
  if (preset->final_logit_softcap != 0.0) {
    md.set(key("final_logit_softcapping"), gguf::Value::f32(static_cast<float>(preset->final_logit_softcap)));
  }
  if (preset->expert_count != 0) {
    md.set(key("expert_count"), gguf::Value::u32(static_cast<uint32_t>(preset->expert_count)));
    md.set(key("expert_used_count"), gguf::Value::u32(static_cast<uint32_t>(preset->expert_used_count)));
    if (preset->expert_feed_forward_length != 0) {
      md.set(key("expert_feed_forward_length"),
             gguf::Value::u32(static_cast<uint32_t>(preset->expert_feed_forward_length)));
    }
    if (preset->expert_shared_feed_forward_length != 0) {
      md.set(key("expert_shared_feed_forward_length"),
             gguf::Value::u32(static_cast<uint32_t>(preset->expert_shared_feed_forward_length)));
    }
  }
  report.vocab_size = copy_vocab(vocab_source, preset->vocab_size, md);
  md.set(key("vocab_size"), gguf::Value::u32(static_cast<uint32_t>(report.vocab_size)));

  unsigned threads = options.threads != 0 ? options.threads
                                          : std::max(1u, std::thread::hardware_concurrency());
  if (options.q4_k_m && options.type != DType::Q4_K)
    fail("the Q4_K_M mixture is llama.cpp's mix around Q4_K: type must be Q4_K");
  auto plans = plan_tensors(*preset, preset_hparams(*preset, layers, report.vocab_size), options.type,
                            options.q4_k_m, report);
  if (options.q4_k_m) apply_q4_k_m(plans, md, report);
  if (options.mxfp4_moe) {
    if (options.type != DType::Q8_0)
      fail("the MXFP4_MOE mixture keeps Q8_0 beside its MXFP4 experts: type must be Q8_0");
    md.set("general.file_type", gguf::Value::u32(38));  // llama.cpp's LLAMA_FTYPE_MOSTLY_MXFP4_MOE
    for (TensorPlan& plan : plans) {
      if (plan.matrix && plan.dims.size() == 3) plan.type = DType::MXFP4;
    }
  }
  for (uint64_t i = 0; i < plans.size(); ++i) {
    const TensorPlan& plan = plans[i];
    writer.add_tensor(plan.name, plan.type, plan.dims,
                      [plan, i, seed = options.seed, threads](std::span<uint8_t> out) {
                        fill_tensor(plan, seed, i, threads, out);
                      });
  }
  writer.write(out_path);
  report.tensors = plans.size();
  report.file_bytes = std::filesystem::file_size(out_path);
  return report;
}

}  // namespace lumen::model
