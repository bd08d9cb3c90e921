// Chat image parts (server/image_parts.h): the bounds hold before decoding, base64 is strict,
// data: URLs name an image type, remote URLs need an allowed domain.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/image_parts.h"
#include "util/error.h"

namespace lumen::server {
namespace {

nlohmann::json part(const std::string& url) { return {{"type", "image_url"}, {"image_url", {{"url", url}}}}; }

std::string refusal(const nlohmann::json& p, const ImageLimits& limits = {}) {
  try {
    parse_image_part(p, limits);
  } catch (const ApiError& e) {
    EXPECT_EQ(e.status(), 400);
    EXPECT_EQ(e.param(), "messages");
    return e.what();
  }
  ADD_FAILURE() << p.dump();
  return {};
}

TEST(ImageParts, DecodesDataUrls) {
  // "GIF89a" and two bytes: one and two padding characters.
  ImagePart p = parse_image_part(part("data:image/gif;base64,R0lGODlhAQ=="), {});
  EXPECT_EQ(p.media_type, "image/gif");
  EXPECT_EQ(p.bytes, std::string("GIF89a\x01", 7));
  EXPECT_EQ(parse_image_part(part("data:IMAGE/PNG;BASE64,AAAA"), {}).bytes, std::string(3, '\0'));
  EXPECT_EQ(parse_image_part(part("data:image/jpeg;base64,QUI="), {}).bytes, "AB");
}

TEST(ImageParts, RefusesMalformedAndOversizedImages) {
  ImageLimits small;
  small.max_image_bytes = 4;
  EXPECT_NE(refusal(part("data:image/png;base64,AAAAAAAA"), small).find("--max-image-bytes"), std::string::npos);
  // 8 characters that decode to 4 bytes fit; one more character's worth is refused before decoding.
  EXPECT_EQ(parse_image_part(part("data:image/png;base64,AAAAAA=="), small).bytes.size(), 4u);
  EXPECT_NE(refusal(part("data:image/png;base64,A A=")).find("not valid base64"), std::string::npos);
  EXPECT_NE(refusal(part("data:image/png;base64,AAA")).find("not valid base64"), std::string::npos);
  EXPECT_NE(refusal(part("data:image/png;base64,")).find("not valid base64"), std::string::npos);
  EXPECT_NE(refusal(part("data:text/html;base64,AAAA")).find("image/png"), std::string::npos);
  EXPECT_NE(refusal(part("data:image/png,AAAA")).find("must be base64"), std::string::npos);
  EXPECT_NE(refusal(part("ftp://x/y.png")).find("data: URL"), std::string::npos);
  refusal({{"type", "image_url"}, {"image_url", "data:image/png;base64,AAAA"}});
  refusal({{"type", "image_url"}, {"image_url", {{"url", "data:image/png;base64,AAAA"}, {"detail", "max"}}}});
}

TEST(ImageParts, RemoteUrlsNeedAnAllowedDomain) {
  ImageLimits limits;
  EXPECT_NE(refusal(part("https://example.com/a.png"), limits).find("--allowed-media-domains"), std::string::npos);
  limits.allowed_media_domains = parse_media_domains(" Example.com, ,img.test ");
  ASSERT_EQ(limits.allowed_media_domains, (std::vector<std::string>{"example.com", "img.test"}));
  EXPECT_EQ(parse_image_part(part("https://cdn.example.com:8443/a.png?x=1"), limits).remote_url,
            "https://cdn.example.com:8443/a.png?x=1");
  EXPECT_FALSE(parse_image_part(part("http://IMG.test/a.png"), limits).remote_url.empty());
  refusal(part("https://badexample.com/a.png"), limits);
  refusal(part("https://example.com.evil.test/a.png"), limits);
  refusal(part("https://example.com@evil.test/a.png"), limits);
  refusal(part("https://[::1]/a.png"), limits);
  EXPECT_THROW(parse_media_domains("a.com,http://b.org"), Error);
  EXPECT_THROW(parse_media_domains(".a.com"), Error);
}

}  // namespace
}  // namespace lumen::server
