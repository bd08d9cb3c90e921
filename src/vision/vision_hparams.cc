#include "vision/vision_hparams.h"

#include <cstring>

#include "util/error.h"

namespace lumen::vision {

namespace {

// Bounds that keep one image's cost bounded whatever the file says. Attention's scores grow
// with the square of the patch count: 16384 patches (Gemma 3 has 4096: 896 px / 14) are 1 GiB
// of scores per head, and the image side is bounded with them (real encoders: 224 to 1024 px).
constexpr int64_t kMaxImageSize = 4096;
constexpr int64_t kMaxPatches = 16384;
constexpr int64_t kMaxWidth = 1 << 16;
constexpr int64_t kMaxLayers = 256;

int64_t positive(const gguf::Metadata& meta, std::string_view key, int64_t most, const std::string& source) {
  const uint64_t v = meta.get_unsigned(key);
  if (v == 0 || v > static_cast<uint64_t>(most)) fail("{}: {} is {}, expected 1 to {}", source, key, v, most);
  return static_cast<int64_t>(v);
}

void read_triplet(const gguf::Metadata& meta, std::string_view key, float (&out)[3], const std::string& source) {
  const gguf::Array* a = meta.find_array(key, gguf::ValueType::F32);
  if (a == nullptr) return;  // the defaults (0.5) stand
  if (a->length != 3) fail("{}: {} has {} values, expected 3 (one per channel)", source, key, a->length);
  std::memcpy(out, a->raw.data(), sizeof(out));
}

// The deepest feature layer LLaVA-style files name (the hidden state index, 0 = the
// embeddings), or 0 when the file names none.
int64_t feature_layer(const gguf::Metadata& meta, int64_t block_count, const std::string& source) {
  const gguf::Value* v = meta.find("clip.vision.feature_layer");
  if (v == nullptr) return 0;
  const gguf::Array* a = meta.find_array("clip.vision.feature_layer", gguf::ValueType::I32);
  if (a == nullptr) a = meta.find_array("clip.vision.feature_layer", gguf::ValueType::U32);
  if (a == nullptr) fail("{}: clip.vision.feature_layer is not an array of 32-bit integers", source);
  if (a->length != 1) {
    fail(
        "{}: clip.vision.feature_layer names {} layers; features concatenated from several layers (Granite "
        "Vision) are not supported",
        source, a->length);
  }
  int32_t layer = 0;
  std::memcpy(&layer, a->raw.data(), sizeof(layer));
  if (layer < 1 || layer > block_count) {
    fail("{}: clip.vision.feature_layer {} is not in 1..{} (block_count)", source, layer, block_count);
  }
  return layer;
}

}  // namespace

ReadHParams read_vision_hparams(const gguf::Metadata& meta, const std::string& source) {
  const std::optional<std::string> arch = meta.find_string("general.architecture");
  if (arch != "clip") {
    fail("{}: not a projector (mmproj) file: general.architecture is \"{}\", expected \"clip\"", source,
         arch.value_or(""));
  }
  if (meta.find_bool("clip.has_vision_encoder") == false) fail("{}: the file has no vision encoder", source);
  std::optional<std::string> type = meta.find_string("clip.projector_type");
  if (!type) type = meta.find_string("clip.vision.projector_type");
  // The legacy LLaVA converter's files before projector_type existed.
  if (!type && meta.find_bool("clip.has_llava_projector") == true) type = "mlp";
  if (!type) fail("{}: no clip.projector_type: cannot tell which projector the file holds", source);
  ReadHParams r;
  try {
    r.family = &projector_family_for(*type);
  } catch (const Error& e) {
    fail("{}: {}", source, e.what());
  }
  VisionHParams& hp = r.hp;
  hp.projector_type = *type;
  hp.image_size = positive(meta, "clip.vision.image_size", kMaxImageSize, source);
  hp.patch_size = positive(meta, "clip.vision.patch_size", kMaxImageSize, source);
  hp.n_embd = positive(meta, "clip.vision.embedding_length", kMaxWidth, source);
  hp.n_ff = positive(meta, "clip.vision.feed_forward_length", 4 * kMaxWidth, source);
  hp.n_head = positive(meta, "clip.vision.attention.head_count", kMaxWidth, source);
  r.block_count = positive(meta, "clip.vision.block_count", kMaxLayers, source);
  hp.eps = meta.find_float("clip.vision.attention.layer_norm_epsilon").value_or(1e-6);
  if (!(hp.eps > 0.0 && hp.eps < 1.0))
    fail("{}: clip.vision.attention.layer_norm_epsilon {} is not in (0, 1)", source, hp.eps);
  if (hp.image_size % hp.patch_size != 0) {
    fail("{}: image_size {} is not a whole number of {}-pixel patches", source, hp.image_size, hp.patch_size);
  }
  if (hp.n_patches() > kMaxPatches) {
    fail("{}: {}-pixel images in {}-pixel patches are {} patches, more than the {} an image may have", source,
         hp.image_size, hp.patch_size, hp.n_patches(), kMaxPatches);
  }
  if (hp.n_embd % hp.n_head != 0) fail("{}: {} heads do not divide embedding_length {}", source, hp.n_head, hp.n_embd);
  const int64_t feature = feature_layer(meta, r.block_count, source);
  hp.n_layer = feature > 0 ? feature : r.block_count;
  read_triplet(meta, "clip.vision.image_mean", hp.mean, source);
  read_triplet(meta, "clip.vision.image_std", hp.std, source);
  const bool gelu = meta.find_bool("clip.use_gelu").value_or(false);
  const bool silu = meta.find_bool("clip.use_silu").value_or(false);
  if (gelu && silu) fail("{}: clip.use_gelu and clip.use_silu are both set", source);
  hp.ffn_act = gelu ? Activation::GeluTanh : silu ? Activation::Silu : r.family->default_activation;
  hp.resize = r.family->resize;
  hp.resize_filter = r.family->resize_filter;
  hp.image_marker = r.family->image_marker;
  hp.image_attends_both_ways = r.family->image_attends_both_ways;
  hp.image_before = r.family->image_before;
  hp.image_after = r.family->image_after;
  try {
    r.family->finish_hparams(meta, hp);
  } catch (const Error& e) {
    fail("{}: {}", source, e.what());
  }
  return r;
}

}  // namespace lumen::vision
