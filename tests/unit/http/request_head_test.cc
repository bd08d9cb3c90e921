// The request-head bounds checked before httplib parses a request.
#include "http/request_head.h"

#include <gtest/gtest.h>

#include <string>

namespace lumen::http {
namespace {

TEST(ScanRequestHead, CompleteHeadsPass) {
  const HeadLimits limits;
  EXPECT_EQ(scan_request_head("GET / HTTP/1.1\r\nHost: a\r\n\r\n", limits), HeadScan::Complete);
  EXPECT_EQ(scan_request_head("GET / HTTP/1.1\r\n\r\nbody after", limits), HeadScan::Complete);
  EXPECT_EQ(scan_request_head("GET / HTTP/1.1\nHost: a\n\n", limits), HeadScan::Complete);
  EXPECT_EQ(scan_request_head("GET / HTTP/1.1\r\nHost: a\r\n", limits), HeadScan::Incomplete);
  EXPECT_EQ(scan_request_head("GET / HT", limits), HeadScan::Incomplete);
  EXPECT_EQ(scan_request_head("", limits), HeadScan::Incomplete);
}

TEST(ScanRequestHead, TooManyFieldsIsTooLarge) {
  HeadLimits limits;
  limits.max_lines = 3;
  std::string head = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 3; ++i) head += "a: b\r\n";
  EXPECT_EQ(scan_request_head(head + "\r\n", limits), HeadScan::Complete);
  head += "a: b\r\n";
  EXPECT_EQ(scan_request_head(head + "\r\n", limits), HeadScan::TooLarge);
  EXPECT_EQ(scan_request_head(head, limits), HeadScan::TooLarge);  // known before the end
}

TEST(ScanRequestHead, LongLineOrLongHeadIsTooLarge) {
  HeadLimits limits;
  limits.max_line_bytes = 100;
  limits.max_bytes = 1000;
  EXPECT_EQ(scan_request_head("GET /" + std::string(200, 'a'), limits), HeadScan::TooLarge);  // unfinished line
  EXPECT_EQ(scan_request_head("GET / HTTP/1.1\r\nx: " + std::string(97, 'b') + "\r\n\r\n", limits), HeadScan::TooLarge);
  EXPECT_EQ(scan_request_head("GET / HTTP/1.1\r\nx: " + std::string(90, 'b') + "\r\n\r\n", limits), HeadScan::Complete);
  std::string many = "GET / HTTP/1.1\r\n";
  while (many.size() < 1000) many += "x: " + std::string(60, 'c') + "\r\n";
  EXPECT_EQ(scan_request_head(many + "\r\n", limits), HeadScan::TooLarge);
}

TEST(ScanRequestHead, AGrowingWindowIsScannedFromWhereTheLastScanStopped) {
  const HeadLimits limits;
  const std::string head = "GET / HTTP/1.1\r\nHost: a\r\nX: y\r\n\r\n";
  HeadScanState state;
  for (size_t n = 0; n < head.size(); ++n) {
    ASSERT_EQ(scan_request_head(std::string_view(head).substr(0, n), limits, state), HeadScan::Incomplete) << n;
  }
  EXPECT_EQ(scan_request_head(head, limits, state), HeadScan::Complete);
  EXPECT_EQ(state.lines, 3u);
}

}  // namespace
}  // namespace lumen::http
