// The chat page's embedded files (web_assets.h): served at the right paths with the right types,
// and written so that the strict Content-Security-Policy lets them work (no inline code, only
// references to files that are embedded).
#include "server/web_assets.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "lumen/error.h"

namespace lumen::server {
namespace {

std::string body_of(std::string_view path) {
  const std::optional<WebAsset> asset = find_web_asset(path);
  return asset ? std::string(asset->body) : std::string();
}

TEST(WebAssets, ServedAtTheirPathsWithTheirTypes) {
  ASSERT_TRUE(find_web_asset("/").has_value());
  EXPECT_EQ(find_web_asset("/")->content_type, "text/html; charset=utf-8");
  ASSERT_TRUE(find_web_asset("/app.js").has_value());
  EXPECT_EQ(find_web_asset("/app.js")->content_type, "text/javascript; charset=utf-8");
  ASSERT_TRUE(find_web_asset("/app.css").has_value());
  EXPECT_EQ(find_web_asset("/app.css")->content_type, "text/css; charset=utf-8");
  EXPECT_NE(body_of("/").find("<title>Lumen chat</title>"), std::string::npos);
}

TEST(WebAssets, OtherPathsAreNotAssets) {
  EXPECT_FALSE(find_web_asset("/index.html").has_value());  // the page lives at / only
  EXPECT_FALSE(find_web_asset("").has_value());
  EXPECT_FALSE(find_web_asset("/app.js/").has_value());
  EXPECT_FALSE(find_web_asset("/appxjs").has_value());
  EXPECT_FALSE(find_web_asset("/../app.js").has_value());
  EXPECT_FALSE(find_web_asset("/v1/models").has_value());
}

TEST(WebAssets, EveryFileHasAType) {
  ASSERT_GE(embedded_web_files().size(), 3u);
  for (const EmbeddedFile& file : embedded_web_files()) {
    EXPECT_NO_THROW(web_content_type(file.name)) << file.name;
    EXPECT_FALSE(file.bytes.empty()) << file.name;
  }
  EXPECT_THROW(web_content_type("tool.exe"), Error);
}

TEST(WebAssets, PageReferencesOnlyEmbeddedFiles) {
  const std::string page = body_of("/");
  const std::regex reference(R"re((src|href)="(/[^"]*)")re");
  int references = 0;
  for (auto it = std::sregex_iterator(page.begin(), page.end(), reference); it != std::sregex_iterator(); ++it) {
    EXPECT_TRUE(find_web_asset((*it)[2].str()).has_value()) << (*it)[2].str();
    ++references;
  }
  EXPECT_EQ(references, 5);  // markdown.js, storage.js, images.js, app.js and app.css
}

TEST(WebAssets, NothingInlineThatThePolicyWouldBlock) {
  const std::string page = body_of("/");
  // Every <script> has a src, no <style> element, no style="" or on...="" attribute.
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(<script(?![^>]*\bsrc=))")));
  EXPECT_EQ(page.find("<style"), std::string::npos);
  EXPECT_FALSE(std::regex_search(page, std::regex(R"(\s(style|on[a-z]+)=)")));
  const std::string script = body_of("/app.js");
  EXPECT_EQ(script.find("eval("), std::string::npos);
  EXPECT_EQ(script.find("new Function"), std::string::npos);
}

TEST(WebAssets, PolicyAllowsOnlyTheServersOwnFiles) {
  const std::string policy(kWebContentSecurityPolicy);
  EXPECT_NE(policy.find("default-src 'none'"), std::string::npos);
  EXPECT_NE(policy.find("script-src 'self'"), std::string::npos);
  EXPECT_NE(policy.find("frame-ancestors 'none'"), std::string::npos);
  EXPECT_EQ(policy.find("unsafe"), std::string::npos);
}

}  // namespace
}  // namespace lumen::server
