// The request rules of http_policy.h, apart from any socket.
#include "http/http_policy.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::http {
namespace {

TEST(HttpPolicy, MediaTypeIgnoresCaseAndParameters) {
  EXPECT_EQ(media_type("Application/JSON; charset=utf-8"), "application/json");
  EXPECT_EQ(media_type("  application/json  "), "application/json");
  EXPECT_EQ(media_type(""), "");
  EXPECT_TRUE(acceptable_body_type("application/json"));
  EXPECT_TRUE(acceptable_body_type(""));  // simple clients send none
  EXPECT_FALSE(acceptable_body_type("application/x-www-form-urlencoded"));
  EXPECT_FALSE(acceptable_body_type("text/plain"));
  EXPECT_FALSE(acceptable_body_type("multipart/form-data; boundary=x"));
  EXPECT_FALSE(acceptable_body_type("application/jsonx"));
}

TEST(HttpPolicy, BearerSchemeIsCaseInsensitive) {
  EXPECT_EQ(bearer_token("Bearer abc"), "abc");
  EXPECT_EQ(bearer_token("bearer abc"), "abc");
  EXPECT_EQ(bearer_token("BEARER   abc  "), "abc");
  EXPECT_EQ(bearer_token("Basic abc"), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer"), std::nullopt);
  EXPECT_EQ(bearer_token("Bearer   "), std::nullopt);
  EXPECT_EQ(bearer_token(""), std::nullopt);
  EXPECT_EQ(bearer_token("Bearerabc"), std::nullopt);
}

TEST(HttpPolicy, SameSecret) {
  EXPECT_TRUE(same_secret("k3y", "k3y"));
  EXPECT_FALSE(same_secret("k3y", "k3z"));
  EXPECT_FALSE(same_secret("k3", "k3y"));
  EXPECT_FALSE(same_secret("", "k"));
}

TEST(HttpPolicy, AnyOfTheKeysAdmits) {
  const std::vector<std::string> keys = {"tenant-a", "tenant-b"};
  EXPECT_TRUE(carries_api_key("Bearer tenant-a", keys));
  EXPECT_TRUE(carries_api_key("bearer  tenant-b ", keys));
  EXPECT_FALSE(carries_api_key("Bearer tenant-c", keys));
  EXPECT_FALSE(carries_api_key("Bearer tenant-", keys));
  EXPECT_FALSE(carries_api_key("Basic tenant-a", keys));
  EXPECT_FALSE(carries_api_key("tenant-a", keys));
  EXPECT_FALSE(carries_api_key("", keys));
  EXPECT_FALSE(carries_api_key("Bearer tenant-a", {}));
}

TEST(HttpPolicy, Cors) {
  EXPECT_FALSE(CorsPolicy().enabled());
  EXPECT_FALSE(CorsPolicy::parse("").enabled());
  const CorsPolicy some = CorsPolicy::parse("http://a.example, http://b.example:3000");
  EXPECT_TRUE(some.enabled());
  EXPECT_EQ(some.allow_origin("http://a.example"), "http://a.example");
  EXPECT_EQ(some.allow_origin("http://b.example:3000"), "http://b.example:3000");
  EXPECT_EQ(some.allow_origin("http://a.example.evil"), std::nullopt);
  EXPECT_EQ(some.allow_origin(""), std::nullopt);
  EXPECT_EQ(CorsPolicy::parse("*").allow_origin("http://x"), "*");
}

TEST(HttpPolicy, HostsOfALoopbackServer) {
  const HostPolicy loopback({}, true);
  EXPECT_TRUE(loopback.allows("127.0.0.1:8080"));
  EXPECT_TRUE(loopback.allows("localhost"));
  EXPECT_TRUE(loopback.allows("LOCALHOST:1"));
  EXPECT_TRUE(loopback.allows("[::1]:8080"));
  EXPECT_TRUE(loopback.allows(""));                    // no Host header: not a browser
  EXPECT_FALSE(loopback.allows("evil.example:8080"));  // a rebound name
  EXPECT_FALSE(loopback.allows("127.0.0.1.evil.example"));
  EXPECT_TRUE(HostPolicy({}, false).allows("any.example"));
}

TEST(HttpPolicy, ListedHosts) {
  const HostPolicy listed(HostPolicy::parse_list("api.example, Other.Example"), true);
  EXPECT_TRUE(listed.allows("api.example:443"));
  EXPECT_TRUE(listed.allows("other.example"));
  EXPECT_FALSE(listed.allows("localhost"));
  EXPECT_FALSE(listed.allows(""));
  EXPECT_TRUE(HostPolicy({"*"}, true).allows("whatever"));
  EXPECT_TRUE(is_loopback_host("127.0.0.1"));
  EXPECT_FALSE(is_loopback_host("0.0.0.0"));
}

// The status a request with these headers gets before its body is read, or 0 when it is read.
int body_status(std::string_view method, std::optional<std::string_view> length,
                std::optional<std::string_view> transfer_encoding = {}, std::string_view content_encoding = {},
                size_t repeats = 1) {
  BodyFraming framing;
  framing.method = method;
  framing.content_length_count = length ? repeats : 0;
  framing.content_length = length.value_or("");
  framing.has_transfer_encoding = transfer_encoding.has_value();
  framing.transfer_encoding = transfer_encoding.value_or("");
  framing.content_encoding = content_encoding;
  const std::optional<BodyRefusal> refusal = body_refusal(framing, 1 << 20);
  return refusal ? refusal->status : 0;
}

TEST(HttpPolicy, BodiesNeedABoundedContentLengthAndNoCoding) {
  EXPECT_EQ(body_status("POST", "100"), 0);
  EXPECT_EQ(body_status("POST", "0"), 0);
  EXPECT_EQ(body_status("POST", "1048576"), 0);
  EXPECT_EQ(body_status("GET", std::nullopt), 0);
  EXPECT_EQ(body_status("POST", "1048577"), 413);
  EXPECT_EQ(body_status("POST", "99999999999999999999999"), 400);  // past uint64
  EXPECT_EQ(body_status("POST", "12abc"), 400);
  EXPECT_EQ(body_status("POST", "-1"), 400);
  EXPECT_EQ(body_status("POST", "10", std::nullopt, "", 2), 400);  // two lengths: smuggling
  EXPECT_EQ(body_status("POST", std::nullopt), 411);               // read-to-close
  EXPECT_EQ(body_status("POST", std::nullopt, "chunked"), 411);
  EXPECT_EQ(body_status("POST", "10", "Chunked"), 411);  // both: refused, not guessed
  EXPECT_EQ(body_status("POST", std::nullopt, "gzip, chunked"), 501);
  EXPECT_EQ(body_status("POST", "10", std::nullopt, "gzip"), 415);
  EXPECT_EQ(body_status("POST", "10", std::nullopt, "br"), 415);
  EXPECT_EQ(body_status("POST", "10", std::nullopt, "identity"), 0);
}

}  // namespace
}  // namespace lumen::http
