#include "benchmark/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lumen::benchmark {
namespace {

std::vector<std::string> parse_in_pieces(const std::string& stream, size_t piece, bool finish = true) {
  std::vector<std::string> events;
  SseParser parser([&](std::string_view data) { events.emplace_back(data); });
  for (size_t i = 0; i < stream.size(); i += piece) parser.feed(std::string_view(stream).substr(i, piece));
  if (finish) parser.finish();
  return events;
}

const std::string kOpenAiStream =
    "data: {\"choices\":[{\"text\":\"Hello\"}]}\n\n"
    ": keep-alive comment\n\n"
    "data: {\"choices\":[{\"text\":\" world\"}]}\r\n\r\n"
    "event: message\nid: 3\ndata:{\"usage\":{}}\r\r"
    "data: [DONE]\n\n";

TEST(SseParser, SplitsEventsWhateverTheReadBoundaries) {
  const std::vector<std::string> expected = {"{\"choices\":[{\"text\":\"Hello\"}]}",
                                             "{\"choices\":[{\"text\":\" world\"}]}", "{\"usage\":{}}", "[DONE]"};
  // Every piece size, including 1 byte (which splits "\r\n" and "data:" itself).
  for (size_t piece = 1; piece <= kOpenAiStream.size(); ++piece) {
    EXPECT_EQ(parse_in_pieces(kOpenAiStream, piece), expected) << "piece size " << piece;
  }
}

TEST(SseParser, JoinsMultipleDataLinesWithNewlines) {
  EXPECT_EQ(parse_in_pieces("data: a\ndata:b\ndata\n\n", 3), (std::vector<std::string>{"a\nb\n"}));
}

TEST(SseParser, AnEventIsHandedOnOnlyAtItsBlankLineOrTheEnd) {
  EXPECT_TRUE(parse_in_pieces("data: x\n", 100, false).empty());
  EXPECT_EQ(parse_in_pieces("data: x\n", 100, true), (std::vector<std::string>{"x"}));
  EXPECT_EQ(parse_in_pieces("data: [DONE]", 100, true), (std::vector<std::string>{"[DONE]"}));
  EXPECT_TRUE(parse_in_pieces(": only a comment\n\nretry: 5\n\n", 4).empty());
}

TEST(SseParser, KeepsOnlyOneLeadingSpaceOfAValue) {
  EXPECT_EQ(parse_in_pieces("data:  two\n\n", 2), (std::vector<std::string>{" two"}));
}

}  // namespace
}  // namespace lumen::benchmark
