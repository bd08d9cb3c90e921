// The access log line: what it says, and that a client cannot forge lines through it.
#include "server/access_log.h"

#include <gtest/gtest.h>

#include <set>

#include "util/error.h"

namespace lumen::server {
namespace {

httplib::Request request(std::string method, std::string path) {
  httplib::Request r;
  r.method = std::move(method);
  r.path = std::move(path);
  r.remote_addr = "127.0.0.1";
  return r;
}

TEST(AccessLog, OneLineWithIdStatusAndTokens) {
  httplib::Response response;
  response.status = 200;
  response.set_header("X-Request-Id", "req-0123456789abcdef");
  RequestNote note;
  note.prompt_tokens = 12;
  note.completion_tokens = 3;
  note.start = std::chrono::steady_clock::now();
  const std::string line = access_log_line(LogLevel::Info, request("POST", "/v1/completions"), response, note);
  EXPECT_NE(line.find("req-0123456789abcdef POST /v1/completions 200"), std::string::npos) << line;
  EXPECT_NE(line.find("prompt_tokens=12 completion_tokens=3"), std::string::npos) << line;
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(AccessLog, QuietKeepsOnlyServerErrors) {
  httplib::Response ok, fault;
  ok.status = 404;
  fault.status = 500;
  EXPECT_EQ(access_log_line(LogLevel::Quiet, request("GET", "/x"), ok, {}), "");
  EXPECT_NE(access_log_line(LogLevel::Quiet, request("GET", "/x"), fault, {}), "");
}

TEST(AccessLog, ClientTextCannotForgeLines) {
  httplib::Response response;
  response.status = 404;
  RequestNote note;
  note.error_detail = "boom\nlumen serve: fake";
  const std::string line =
      access_log_line(LogLevel::Verbose, request("GET", "/a\nlumen serve: 127.0.0.1 fake"), response, note);
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;
}

TEST(AccessLog, RequestIdsAreUniqueAndShaped) {
  std::set<std::string> ids;
  for (int i = 0; i < 1000; ++i) {
    const std::string id = new_request_id();
    ASSERT_EQ(id.size(), 20u);
    ASSERT_EQ(id.rfind("req-", 0), 0u);
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 1000u);
  EXPECT_EQ(parse_log_level("verbose"), LogLevel::Verbose);
  EXPECT_THROW(parse_log_level("loud"), Error);
}

TEST(AccessLog, AClientsRequestIdIsKeptWhenALogLineCanHoldItAsItIs) {
  EXPECT_EQ(request_id_for("trace-42:a_b.c"), "trace-42:a_b.c");
  EXPECT_EQ(request_id_for(std::string(128, 'x')), std::string(128, 'x'));
  // Empty, too long, or holding what could forge or split a line: a new id of our own.
  for (const std::string& bad : {std::string(), std::string(129, 'x'), std::string("a b"), std::string("a\nb"),
                                 std::string("a\"b"), std::string("\xc3\xa9")}) {
    const std::string id = request_id_for(bad);
    EXPECT_EQ(id.rfind("req-", 0), 0u) << bad;
    EXPECT_EQ(id.size(), 20u) << bad;
  }
}

}  // namespace
}  // namespace lumen::server
