// The mmproj loader refuses what it cannot run with a message naming the problem: copies of the
// tiny LLaVA file with one thing changed (Lumen's GGUF writer), and a truncated file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "gguf/value.h"
#include "vision/vision_model.h"
#include "vision_test_files.h"

namespace lumen::vision {
namespace {

using testing::GgufEdit;
using testing::rewrite_gguf;
using testing::tiny_mmproj_path;

// The load error for the tiny LLaVA file with `edit` applied.
std::string load_error(const std::string& label, const GgufEdit& edit) {
  const std::string path = std::string(LUMEN_GENERATED_DIR) + "/vlm-refused-" + label + ".gguf";
  rewrite_gguf(tiny_mmproj_path("llava"), path, edit);
  try {
    (void)VisionModel::load(path, {.threads = 1});
  } catch (const Error& e) {
    std::filesystem::remove(path);
    return e.what();
  }
  std::filesystem::remove(path);
  return "(loaded)";
}

GgufEdit set_key(std::string key, gguf::Value value) {
  return {[key, value](gguf::Metadata& m) { m.set(key, value); }, nullptr};
}

GgufEdit drop_tensor(std::string name) {
  return testing::edit_tensors([name](const gguf::TensorInfo& t, tensor::DType&, std::vector<int64_t>&,
                                      std::vector<uint8_t>&) { return t.name != name; });
}

#define EXPECT_MENTIONS(text, part) EXPECT_NE((text).find(part), std::string::npos) << (text)

TEST(VisionLoader, RefusesAnotherProjectorTypeNamingTheSupportedOnes) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const std::string e = load_error("resampler", set_key("clip.projector_type", gguf::Value::of_string("resampler")));
  EXPECT_MENTIONS(e, "projector_type \"resampler\" is not one Lumen runs");
  EXPECT_MENTIONS(e, "mlp, gemma3, idefics3");
  EXPECT_MENTIONS(e, "vlm-refused-resampler.gguf");
}

TEST(VisionLoader, RefusesATextModelFile) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const std::string e = load_error("llama", set_key("general.architecture", gguf::Value::of_string("llama")));
  EXPECT_MENTIONS(e, "not a projector (mmproj) file: general.architecture is \"llama\"");
}

TEST(VisionLoader, RefusesAMissingTensorByName) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  EXPECT_MENTIONS(load_error("no-attn-k", drop_tensor("v.blk.1.attn_k.weight")), "misses tensor v.blk.1.attn_k.weight");
  EXPECT_MENTIONS(load_error("no-mm2", drop_tensor("mm.2.weight")), "misses tensor mm.2.weight");
}

TEST(VisionLoader, RefusesATensorOfTheWrongShape) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const std::string e =
      load_error("short-position", testing::edit_tensors([](const gguf::TensorInfo& t, tensor::DType&,
                                                            std::vector<int64_t>& dims, std::vector<uint8_t>& bytes) {
                   if (t.name == "v.position_embd.weight") {  // one position short
                     dims[1] -= 1;
                     bytes.resize(bytes.size() - static_cast<size_t>(dims[0]) * 2);
                   }
                   return true;
                 }));
  EXPECT_MENTIONS(e, "tensor v.position_embd.weight has shape [64, 16], expected [64, 17]");
}

TEST(VisionLoader, RefusesATensorNoFamilyDeclares) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  EXPECT_EQ(load_error("unchanged", {}), "(loaded)");  // a copy with nothing changed loads
  const std::string path = std::string(LUMEN_GENERATED_DIR) + "/vlm-refused-extra-tensor.gguf";
  {
    const gguf::GgufFile in = gguf::GgufFile::open(tiny_mmproj_path("llava"));
    gguf::GgufWriter out;
    for (const auto& [key, value] : in.metadata().entries()) out.metadata().set(key, value);
    for (const gguf::TensorInfo& t : in.tensors()) out.add_tensor(t.name, t.type, t.dims, t.span());
    const std::vector<float> extra(64, 1.0f);
    out.add_tensor("mm.model.fc.weight", tensor::DType::F32, {64},
                   {reinterpret_cast<const uint8_t*>(extra.data()), extra.size() * sizeof(float)});
    out.write(path);
  }
  try {
    (void)VisionModel::load(path, {.threads = 1});
    ADD_FAILURE() << "loaded a file with a stray tensor";
  } catch (const Error& err) {
    EXPECT_MENTIONS(std::string(err.what()),
                    "holds tensor mm.model.fc.weight, which a mlp projector file does not have");
  }
  std::filesystem::remove(path);
}

TEST(VisionLoader, RefusesAnImageSizeThatIsNotWholePatches) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  EXPECT_MENTIONS(load_error("size", set_key("clip.vision.image_size", gguf::Value::u32(30))),
                  "image_size 30 is not a whole number of 8-pixel patches");
}

TEST(VisionLoader, RefusesMorePatchesThanAnImageMayHave) {
  // 4096 pixels in 8-pixel patches: 262144 patches, whose attention alone would need 256 GiB.
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  EXPECT_MENTIONS(load_error("patches", set_key("clip.vision.image_size", gguf::Value::u32(4096))),
                  "are 262144 patches, more than the 16384 an image may have");
}

TEST(VisionLoader, RefusesSeveralFeatureLayers) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  gguf::Array layers{gguf::ValueType::I32, 2, {}, {}, {}};
  for (int32_t v : {1, 2}) {
    const auto* b = reinterpret_cast<const uint8_t*>(&v);
    layers.raw.insert(layers.raw.end(), b, b + sizeof(v));
  }
  EXPECT_MENTIONS(load_error("features", set_key("clip.vision.feature_layer", gguf::Value::of_array(layers))),
                  "names 2 layers");
}

TEST(VisionLoader, RefusesATruncatedFile) {
  LUMEN_REQUIRE_TINY_MMPROJ("llava");
  const std::string path = std::string(LUMEN_GENERATED_DIR) + "/vlm-refused-truncated.gguf";
  std::filesystem::copy_file(tiny_mmproj_path("llava"), path, std::filesystem::copy_options::overwrite_existing);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  EXPECT_THROW((void)VisionModel::load(path, {.threads = 1}), Error);
  try {
    (void)VisionModel::load(path, {.threads = 1});
  } catch (const Error& e) {
    EXPECT_MENTIONS(std::string(e.what()), "vlm-refused-truncated.gguf");
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace lumen::vision
