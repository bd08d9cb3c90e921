// Image spans that attend both ways (engine/prompt_images.h): a prefill chunk never ends inside
// one, and each of a chunk's rows gets the end of the keys it sees. The engine-level check is
// unit_vlm's VlmGemma3Logits (chunked prefill against transformers); these pin the rules.
#include <gtest/gtest.h>

#include "engine/prompt_images.h"
#include "lumen/error.h"

namespace lumen::engine {
namespace {

// Two images: positions [4, 10) and [12, 15) of a prompt.
std::vector<PromptImage> images() {
  std::vector<PromptImage> out(2);
  out[0].first_token = 4;
  out[0].n_tokens = 6;
  out[1].first_token = 12;
  out[1].n_tokens = 3;
  return out;
}

TEST(WholeImageSpanChunk, AChunkEndingOutsideEverySpanIsKept) {
  EXPECT_EQ(whole_image_span_chunk(images(), 0, 4, 100), 4);    // ends where the first starts
  EXPECT_EQ(whole_image_span_chunk(images(), 0, 10, 100), 10);  // ends where it ends
  EXPECT_EQ(whole_image_span_chunk(images(), 10, 2, 100), 2);   // between the two
  EXPECT_EQ(whole_image_span_chunk(images(), 0, 20, 100), 20);  // past both
  EXPECT_EQ(whole_image_span_chunk(images(), 3, 0, 100), 0);    // nothing wanted, nothing given
}

TEST(WholeImageSpanChunk, AChunkEndingInsideASpanStopsBeforeIt) {
  EXPECT_EQ(whole_image_span_chunk(images(), 0, 7, 100), 4);
  EXPECT_EQ(whole_image_span_chunk(images(), 2, 12, 100), 10);  // inside the second: up to 12
}

TEST(WholeImageSpanChunk, ASpanStartedAtTheChunkComesWholeOrNotAtAll) {
  EXPECT_EQ(whole_image_span_chunk(images(), 4, 3, 100), 6);  // the rest of the span, over n
  EXPECT_EQ(whole_image_span_chunk(images(), 6, 1, 100), 4);  // a prefix adopted inside it
  EXPECT_EQ(whole_image_span_chunk(images(), 4, 3, 5), 0);    // over the step's limit: wait
  EXPECT_EQ(whole_image_span_chunk(images(), 4, 3, 6), 6);
}

TEST(AppendKeyEnds, RowsOfASpanSeeItsEndOthersThemselves) {
  std::vector<int32_t> ends = {99};  // appended after what is there
  append_key_ends(images(), 2, 13, ends);
  const std::vector<int32_t> want = {99, 3, 4, 10, 10, 10, 10, 10, 10, 11, 12, 15, 15, 15};
  EXPECT_EQ(ends, want);
  ends.clear();
  append_key_ends(images(), 7, 3, ends);  // the rest of a span whose start was computed before
  EXPECT_EQ(ends, (std::vector<int32_t>{10, 10, 10}));
  EXPECT_THROW(append_key_ends(images(), 0, 7, ends), Error);  // a chunk cut inside a span
}

TEST(CheckWholeImageSpans, ASpanLongerThanAStepIsRefused) {
  EXPECT_NO_THROW(check_whole_image_spans(images(), 6));
  EXPECT_THROW(check_whole_image_spans(images(), 5), Error);
}

}  // namespace
}  // namespace lumen::engine
