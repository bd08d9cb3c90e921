// Resuming a download (cli/http_range.h): Content-Range parsing and what to do with a response
// to "Range: bytes=<have>-".
#include <gtest/gtest.h>

#include "cli/http_range.h"

namespace lumen::cli {
namespace {

TEST(HttpRange, ParsesContentRange) {
  auto range = parse_content_range(" bytes 100-199/1000\r\n");
  ASSERT_TRUE(range);
  EXPECT_EQ(range->first, 100u);
  EXPECT_EQ(range->last, 199u);
  EXPECT_EQ(range->total, 1000u);
  range = parse_content_range("Bytes 0-0/*");
  ASSERT_TRUE(range);
  EXPECT_FALSE(range->total);
}

TEST(HttpRange, RefusesMalformedContentRange) {
  for (const char* text : {"", "bytes", "bytes */1000", "bytes 5-4/10", "bytes 0-9/9", "bytes -1-5/10",
                           "items 0-1/2", "bytes 0-1/2 junk", "bytes 1-2", "bytes0-1/2",
                           "bytes 99999999999999999999-1/2"}) {
    EXPECT_FALSE(parse_content_range(text)) << text;
  }
}

TEST(HttpRange, DecidesWhatToDoWithTheBody) {
  const auto from = [](uint64_t first) { return ContentRange{first, first + 9, first + 10}; };
  EXPECT_EQ(resume_action(206, from(500), 500), ResumeAction::kAppend);
  EXPECT_EQ(resume_action(206, from(400), 500), ResumeAction::kReject);  // would duplicate bytes
  EXPECT_EQ(resume_action(206, std::nullopt, 500), ResumeAction::kReject);
  EXPECT_EQ(resume_action(200, std::nullopt, 500), ResumeAction::kRestart);  // server ignored the Range
  EXPECT_EQ(resume_action(200, std::nullopt, 0), ResumeAction::kRestart);
  EXPECT_EQ(resume_action(302, std::nullopt, 0), ResumeAction::kReject);
}

}  // namespace
}  // namespace lumen::cli
