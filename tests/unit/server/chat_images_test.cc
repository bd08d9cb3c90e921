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

TEST_F(ChatImages, MarkersExpandIntoEachImagesPositions) {
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
  std::vector<PromptImage> images(2);
  images[0].n_tokens = 3;
  images[1].n_tokens = 2;
  server::expand_image_markers(model, {"</s>", "<s>", ""}, prompt, images);
  // Look <s> [3 image positions] and <s> [2 image positions]
  ASSERT_EQ(prompt.size(), head + 1 + 3 + middle.size() + 1 + 2);
  EXPECT_EQ(prompt[head], bos);
  EXPECT_EQ(images[0].first_token, static_cast<int64_t>(head + 1));
  EXPECT_EQ(images[1].first_token, static_cast<int64_t>(head + 1 + 3 + middle.size() + 1));
  for (const PromptImage& image : images) {
    for (int64_t i = 0; i < image.n_tokens; ++i) EXPECT_EQ(prompt[static_cast<size_t>(image.first_token + i)], marker);
  }
}

TEST_F(ChatImages, TextSpellingTheMarkerIsNoImage) {
  const Model model = handle();
  // What a client's "</s>" becomes: plain text, not the marker's control token.
  std::vector<int32_t> prompt = model.tokenize("see </s>", {.add_special = false, .parse_special = false});
  std::vector<PromptImage> images(1);
  images[0].n_tokens = 2;
  EXPECT_THROW(server::expand_image_markers(model, {"</s>", "", ""}, prompt, images), server::ApiError);
  // A marker that is not one control token is the encoder's mistake, not the client's.
  EXPECT_THROW(server::expand_image_markers(model, {"image", "", ""}, prompt, images), Error);
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
  std::vector<PromptImage> images(1);
  images[0].n_tokens = 4;
  const Model model = handle();
  server::expand_image_markers(model, {"</s>", "", ""}, prompt, images);
  EXPECT_EQ(images[0].first_token, static_cast<int64_t>(prompt.size()) - 4);  // after the text, as written
  // The client's "</s>" is still its characters.
  EXPECT_NE(model.detokenize(std::span(prompt).first(static_cast<size_t>(images[0].first_token))).find("</s>"),
            std::string::npos);
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
