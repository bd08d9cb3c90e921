// encoding_format "base64": the vector's float32 values, little-endian, in padded base64, which
// OpenAI's SDK turns back into floats with numpy.frombuffer(base64.b64decode(s), "float32").
#include <gtest/gtest.h>

#include <cstring>

#include "server/embeddings_request.h"

namespace lumen::server {
namespace {

// Decodes padded base64 (the test's own, independent of the encoder under test).
std::vector<float> decode(const std::string& text) {
  const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  uint32_t bits = 0;
  int n_bits = 0;
  for (char c : text) {
    if (c == '=') break;
    bits = (bits << 6) | static_cast<uint32_t>(alphabet.find(c));
    n_bits += 6;
    if (n_bits >= 8) {
      n_bits -= 8;
      bytes += static_cast<char>((bits >> n_bits) & 0xFF);
    }
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);  // the test host is little-endian (x86)
  return out;
}

TEST(EmbeddingsBase64, KnownValues) {
  // 1.0f is 0x3F800000: bytes 00 00 80 3F.
  EXPECT_EQ(base64_floats({1.0f}), "AACAPw==");
  // -2.0f is 0xC0000000, 0.5f is 0x3F000000: 00 00 00 C0 00 00 00 3F.
  EXPECT_EQ(base64_floats({-2.0f, 0.5f}), "AAAAwAAAAD8=");
  EXPECT_EQ(base64_floats({}), "");
}

TEST(EmbeddingsBase64, RoundTripsEveryPaddingLength) {
  for (size_t n : {1u, 2u, 3u, 7u, 64u}) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i) * -0.37f + 1e-3f;
    const std::string text = base64_floats(v);
    EXPECT_EQ(text.size() % 4, 0u);
    EXPECT_EQ(decode(text), v) << n;
  }
}

TEST(EmbeddingsBase64, EntryCarriesEitherForm) {
  const nlohmann::json floats = embedding_entry(3, {0.25f}, false);
  EXPECT_EQ(floats["object"], "embedding");
  EXPECT_EQ(floats["index"], 3);
  EXPECT_EQ(floats["embedding"], nlohmann::json::array({0.25}));
  EXPECT_EQ(embedding_entry(0, {1.0f}, true)["embedding"], "AACAPw==");
}

}  // namespace
}  // namespace lumen::server
