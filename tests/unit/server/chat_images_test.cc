// Image markers in a rendered chat prompt (server/chat_images.h), on the synthetic model's real
// vocabulary: each marker control token becomes the encoder's before-text, the image's
// placeholder positions and its after-text; message text spelling the marker is not a marker.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "engine/chat_prompt.h"
#include "lumen/error.h"
#include "server/api_error.h"
#include "server/chat_images.h"
#include "server/chat_request.h"
#include "server/json_body.h"
#include "unit/engine/synth_engine.h"

namespace lumen::testing {
namespace {

class ChatImages : public SynthEngineTest {};

// A feature vector of n rows, as an encoder returns it, under a layout.
Engine::ImageFeatures encoded(int64_t n, std::vector<EncodedImage::Piece> layout, uint64_t hash) {
  auto image = std::make_shared<EncodedImage>();
  image->features.assign(static_cast<size_t>(n * 4), 0.25f);
  image->layout = std::move(layout);
  return {{hash, hash}, image};
}

TEST_F(ChatImages, MarkersExpandIntoEachImagesLayout) {
  const Model model = handle();
  const TokenizeOptions plain{.add_special = false, .parse_special = false};
  const int32_t marker = model.tokenize("</s>", {.add_special = false, .parse_special = true}).at(0);
  const int32_t bos = model.tokenize("<s>", {.add_special = false, .parse_special = true}).at(0);
  std::vector<int32_t> prompt = model.tokenize("Look", plain);
  const size_t head = prompt.size();
  prompt.push_back(marker);
  const std::vector<int32_t> middle = model.tokenize(" and", plain);
  prompt.insert(prompt.end(), middle.begin(), middle.end());
  prompt.push_back(marker);
  // One plain image of 3 positions; one of two tiles, the marker itself in its text (Gemma 3's
  // layout text holds its marker too), and a closing piece of text only.
  const std::vector<Engine::ImageFeatures> images = {encoded(3, {{"<s>", 3}}, 1),
                                                     encoded(3, {{"<s></s>", 2}, {"<s>", 1}, {"</s>", 0}}, 2)};
  const std::vector<PromptImage> placed = server::expand_image_markers(model, "</s>", prompt, images);
  // Look <s> [3] and <s></s> [2] <s> [1] </s>
  ASSERT_EQ(placed.size(), 3u);
  ASSERT_EQ(prompt.size(), head + 1 + 3 + middle.size() + 2 + 2 + 1 + 1 + 1);
  EXPECT_EQ(prompt[head], bos);
  EXPECT_EQ(placed[0].first_token, static_cast<int64_t>(head + 1));
  EXPECT_EQ(placed[1].first_token, static_cast<int64_t>(head + 1 + 3 + middle.size() + 2));
  EXPECT_EQ(placed[2].first_token, placed[1].first_token + 2 + 1);
  EXPECT_EQ(placed[1].embeddings_row, 0);
  EXPECT_EQ(placed[2].embeddings_row, 2);
  EXPECT_EQ(placed[2].embeddings, placed[1].embeddings);  // one vector, shared
  EXPECT_EQ(placed[1].content_hash, images[1].content_hash);
  EXPECT_EQ(prompt.back(), marker);
  for (const PromptImage& image : placed) {
    for (int64_t i = 0; i < image.n_tokens; ++i) EXPECT_EQ(prompt[static_cast<size_t>(image.first_token + i)], marker);
  }
}

TEST_F(ChatImages, TextSpellingTheMarkerIsNoImage) {
  const Model model = handle();
  // What a client's "</s>" becomes: plain text, not the marker's control token.
  std::vector<int32_t> prompt = model.tokenize("see </s>", {.add_special = false, .parse_special = false});
  const std::vector<Engine::ImageFeatures> images = {encoded(2, {{"", 2}}, 1)};
  EXPECT_THROW(server::expand_image_markers(model, "</s>", prompt, images), server::ApiError);
  // A marker that is not one control token is the encoder's mistake, not the client's.
  EXPECT_THROW(server::expand_image_markers(model, "image", prompt, images), Error);
}

// The whole text path: an OpenAI body with an image part and text that spells the marker, the
// messages as the template gets them (parts), a Hugging Face-style template writing the marker
// for the image part, the tokens, and the expansion: exactly one image slot, the template's.
TEST_F(ChatImages, OnlyTheTemplatesMarkerBecomesAnImageSlot) {
  const nlohmann::json body = server::parse_json_body(R"({"messages": [{"role": "user", "content": [
      {"type": "text", "text": "what is </s> here"},
      {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}]}]})");
  server::ImageLimits limits;
  std::vector<server::ImagePart> parts;
  const nlohmann::ordered_json messages = server::parse_messages(body, 16, &limits, &parts);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].bytes, std::string("\x89PNG\r\n\x1a\n", 8));
  ASSERT_TRUE(messages[0]["content"].is_array());
  EXPECT_EQ(messages[0]["content"][1]["type"], "image");
  const chat::ChatTemplate tmpl = chat::ChatTemplate::parse(
      "{% for m in messages %}{% for p in m['content'] %}{% if p['type'] == 'image' %}</s>{% else %}"
      "{{ p['text'] }}{% endif %}{% endfor %}{% endfor %}");
  std::vector<int32_t> prompt = engine::chat_prompt_tokens(tmpl, model_->tokenizer, messages, {});
  const Model model = handle();
  const std::vector<PromptImage> placed =
      server::expand_image_markers(model, "</s>", prompt, {encoded(4, {{"", 4}}, 3)});
  ASSERT_EQ(placed.size(), 1u);
  EXPECT_EQ(placed[0].first_token, static_cast<int64_t>(prompt.size()) - 4);  // after the text, as written
  // The client's "</s>" is still its characters.
  EXPECT_NE(model.detokenize(std::span(prompt).first(static_cast<size_t>(placed[0].first_token))).find("</s>"),
            std::string::npos);
}

// A part whose "type" is not a string is refused as a malformed part (400), not thrown as a JSON
// type error: the fuzzer's {"type": true} in a request that may hold images.
TEST_F(ChatImages, APartTypeOfAnotherKindIsAClearRefusal) {
  for (const char* type : {"true", "3", "null", "[\"image_url\"]", "{\"a\": 1}"}) {
    const nlohmann::json body = server::parse_json_body(
        std::string(R"({"messages": [{"role": "user", "content": [{"type": )") + type + R"(, "text": "b"}]}]})");
    server::ImageLimits limits;
    std::vector<server::ImagePart> parts;
    try {
      (void)server::parse_messages(body, 16, &limits, &parts);
      ADD_FAILURE() << type << ": accepted";
    } catch (const server::ApiError& e) {
      EXPECT_EQ(e.status(), 400) << type;
      EXPECT_NE(std::string(e.what()).find("content parts must be"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(parts.empty());
  }
}

TEST_F(ChatImages, ATextModelRefusesImagesWithTheFix) {
  std::vector<server::ImagePart> images(1);
  images[0].bytes.assign(1, 'x');  // (assigning a literal trips GCC 12's false -Wrestrict)
  try {
    server::check_images_servable(handle(), images);
    ADD_FAILURE();
  } catch (const server::ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_NE(std::string(e.what()).find("start lumen serve with --mmproj"), std::string::npos);
  }
  EXPECT_NO_THROW(server::check_images_servable(handle(), {}));
}

}  // namespace
}  // namespace lumen::testing
