#include "benchmark/stream_recorder.h"

#include <gtest/gtest.h>

#include <string>

namespace lumen::benchmark {
namespace {

std::string chunk(const std::string& text) {
  return "data: {\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[{\"index\":0,\"text\":\"" + text +
         "\",\"finish_reason\":null}],\"usage\":null}\n\n";
}
const std::string kUsage =
    "data: "
    "{\"id\":\"c\",\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5,\"total_tokens\":17}}\n\n";
const std::string kDone = "data: [DONE]\n\n";

TEST(StreamRecorder, TimesTextChunksAndTakesTheTokenCountFromUsage) {
  StreamRecorder r;
  r.on_status(200);
  r.on_bytes(chunk("A"), 0.25);
  r.on_bytes(chunk("B") + chunk("C"), 0.30);  // two chunks in one read: one arrival time
  r.on_bytes(chunk(""), 0.32);                // no text (a held-back token): not timed
  r.on_bytes(chunk("D"), 0.45);
  r.on_bytes(kUsage + kDone, 0.46);
  const RequestResult res = r.finish(0.5);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_DOUBLE_EQ(res.ttft, 0.25);
  EXPECT_DOUBLE_EQ(res.e2el, 0.5);
  ASSERT_EQ(res.itl.size(), 3u);
  EXPECT_NEAR(res.itl[0], 0.05, 1e-12);
  EXPECT_NEAR(res.itl[1], 0.0, 1e-12);
  EXPECT_NEAR(res.itl[2], 0.15, 1e-12);
  EXPECT_TRUE(res.usage_reported);
  EXPECT_EQ(res.output_tokens, 5);
  EXPECT_EQ(res.text_chunks, 4);
  EXPECT_EQ(res.prompt_tokens, 12);
  EXPECT_NEAR(res.tpot(), (0.5 - 0.25) / 4, 1e-12);
}

TEST(StreamRecorder, CountsTextChunksWithoutUsage) {
  StreamRecorder r;
  r.on_status(200);
  r.on_bytes(chunk("x") + chunk("y"), 0.1);
  r.on_bytes(chunk("z") + kDone, 0.2);
  const RequestResult res = r.finish(0.2);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_FALSE(res.usage_reported);
  EXPECT_EQ(res.output_tokens, 3);
  EXPECT_EQ(res.text_chunks, 3);
  EXPECT_EQ(res.prompt_tokens, -1);
}

TEST(StreamRecorder, ReadsChatDeltas) {
  StreamRecorder r;
  r.on_status(200);
  r.on_bytes("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n", 0.1);
  r.on_bytes("data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n", 0.2);
  r.on_bytes("data: {\"choices\":[{\"delta\":{\"content\":\"!\"}}]}\n\ndata: [DONE]\n\n", 0.3);
  const RequestResult res = r.finish(0.3);
  ASSERT_TRUE(res.ok) << res.error;
  EXPECT_DOUBLE_EQ(res.ttft, 0.2);  // the role-only chunk carries no token
  EXPECT_EQ(res.output_tokens, 2);
}

TEST(StreamRecorder, AnHttpErrorFailsWithTheServersMessage) {
  StreamRecorder r;
  r.on_status(400);
  r.on_bytes("{\"error\":{\"message\":\"the prompt is too long\",\"type\":\"invalid_request_error\"}}", 0.01);
  const RequestResult res = r.finish(0.01);
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error, "HTTP 400: the prompt is too long");
}

TEST(StreamRecorder, AnErrorEventMidStreamFails) {
  StreamRecorder r;
  r.on_status(200);
  r.on_bytes(chunk("a"), 0.1);
  r.on_bytes("data: {\"error\":{\"message\":\"aborted\",\"code\":\"aborted\"}}\n\n" + kDone, 0.2);
  const RequestResult res = r.finish(0.2);
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error, "error event: aborted");
}

TEST(StreamRecorder, AStreamCutBeforeDoneFails) {
  StreamRecorder r;
  r.on_status(200);
  r.on_bytes(chunk("a"), 0.1);
  EXPECT_EQ(r.finish(0.2).error, "the stream ended before [DONE]");

  StreamRecorder cut;
  cut.on_status(200);
  cut.on_bytes(chunk("a"), 0.1);
  EXPECT_EQ(cut.finish(0.2, "connection: Read").error, "connection: Read");
}

TEST(StreamRecorder, AConnectionThatNeverAnsweredFails) {
  StreamRecorder r;
  const RequestResult res = r.finish(0.01, "connection: Connection");
  EXPECT_FALSE(res.ok);
  EXPECT_EQ(res.error, "connection: Connection");
  EXPECT_EQ(res.output_tokens, 0);
}

TEST(StreamRecorder, MalformedOrEmptyStreamsFail) {
  StreamRecorder bad;
  bad.on_status(200);
  bad.on_bytes("data: {not json\n\n" + kDone, 0.1);
  EXPECT_NE(bad.finish(0.1).error.find("not a JSON object"), std::string::npos);

  StreamRecorder empty;
  empty.on_status(200);
  empty.on_bytes(kDone, 0.1);
  EXPECT_EQ(empty.finish(0.1).error, "the stream carried no generated text");
}

}  // namespace
}  // namespace lumen::benchmark
