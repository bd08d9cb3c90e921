#include "benchmark/server_target.h"

#include <gtest/gtest.h>

#include "util/error.h"

namespace lumen::benchmark {
namespace {

TEST(ServerTarget, SplitsHostFromPath) {
  ServerTarget t = parse_server_target("http://127.0.0.1:8080", "/v1/completions");
  EXPECT_EQ(t.scheme_host_port, "http://127.0.0.1:8080");
  EXPECT_EQ(t.path, "/v1/completions");
  t = parse_server_target("https://example.com/api/", "/v1/chat/completions");
  EXPECT_EQ(t.scheme_host_port, "https://example.com");
  EXPECT_EQ(t.path, "/api/v1/chat/completions");
}

TEST(ServerTarget, AcceptsAnSdkStyleBaseUrlEndingInV1) {
  ServerTarget t = parse_server_target("http://127.0.0.1:8080/v1", "/v1/completions");
  EXPECT_EQ(t.scheme_host_port, "http://127.0.0.1:8080");
  EXPECT_EQ(t.path, "/v1/completions");
  t = parse_server_target("http://host/proxy/v1/", "/v1/chat/completions");
  EXPECT_EQ(t.path, "/proxy/v1/chat/completions");
  // Only a whole /v1 segment is folded.
  t = parse_server_target("http://host/apiv1", "/v1/completions");
  EXPECT_EQ(t.path, "/apiv1/v1/completions");
}

TEST(ServerTarget, RejectsWhatItCannotReach) {
  EXPECT_THROW(parse_server_target("127.0.0.1:8080", "/v1/completions"), Error);
  EXPECT_THROW(parse_server_target("ftp://host", "/v1/completions"), Error);
  EXPECT_THROW(parse_server_target("http://", "/v1/completions"), Error);
  EXPECT_THROW(parse_server_target("http://host", "v1/completions"), Error);
}

}  // namespace
}  // namespace lumen::benchmark
