// Instance URLs: exactly http://host:port, anything else refused at startup with a clear reason.
#include "proxy/upstream_address.h"

#include <gtest/gtest.h>

#include <string>

#include "lumen/error.h"

namespace lumen::proxy {
namespace {

std::string refusal(const std::string& url) {
  try {
    parse_upstream_address(url, "--decode");
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(UpstreamAddress, AcceptsHostAndPort) {
  const UpstreamAddress address = parse_upstream_address("http://Decode-1.internal:8001", "--decode");
  EXPECT_EQ(address.host, "decode-1.internal");
  EXPECT_EQ(address.port, 8001);
  EXPECT_EQ(address.url(), "http://decode-1.internal:8001");
  EXPECT_EQ(parse_upstream_address("HTTP://127.0.0.1:80/", "--prefill").url(), "http://127.0.0.1:80");
}

TEST(UpstreamAddress, RefusesEverythingElseSayingWhy) {
  EXPECT_NE(refusal("https://a:1").find("https is not supported"), std::string::npos);
  EXPECT_NE(refusal("a:1").find("not an http:// URL"), std::string::npos);
  EXPECT_NE(refusal("http://a").find("port is missing"), std::string::npos);
  EXPECT_NE(refusal("http://a:1/v1").find("path"), std::string::npos);
  EXPECT_NE(refusal("http://a:1?x=1").find("query"), std::string::npos);
  EXPECT_NE(refusal("http://user:pw@a:1").find("credentials"), std::string::npos);
  EXPECT_NE(refusal("http://[::1]:1").find("IPv6"), std::string::npos);
  EXPECT_NE(refusal("http://:1").find("host is missing"), std::string::npos);
  EXPECT_NE(refusal("http://a b:1").find("not a host name"), std::string::npos);
  for (const char* port : {"0", "65536", "99999999", "-1", "8x", ""}) {
    EXPECT_NE(refusal(std::string("http://a:") + port).find("port must be"), std::string::npos) << port;
  }
  EXPECT_NE(refusal("ftp://a:1").find("--decode 'ftp://a:1'"), std::string::npos);
}

}  // namespace
}  // namespace lumen::proxy
