// A reasoning model's reply split into reasoning_content and content (server/reasoning_split.h):
// the same split whether the reply arrives whole or a byte at a time (a tag cut anywhere between
// two chunks is held, never sent as text), Qwen3's own <think> block and DeepSeek-R1's block
// opened by the prompt, a block never closed, and what the prompt's end says.
#include "server/reasoning_split.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lumen::server {
namespace {

// The reply fed in pieces of `piece` bytes; every released part concatenated.
ReasoningDelta split_in_pieces(const std::string& reply, bool in_reasoning, size_t piece) {
  ReasoningSplit split(in_reasoning);
  ReasoningDelta all;
  for (size_t i = 0; i < reply.size(); i += piece) {
    ReasoningDelta d = split.add(std::string_view(reply).substr(i, piece));
    all.reasoning += d.reasoning;
    all.content += d.content;
  }
  ReasoningDelta rest = split.finish();
  all.reasoning += rest.reasoning;
  all.content += rest.content;
  return all;
}

struct Case {
  std::string reply;
  bool in_reasoning;
  std::string reasoning, content;
};

TEST(ReasoningSplit, SplitsAlikeWholeOrInAnyPieces) {
  const std::vector<Case> cases = {
      // Qwen3: the reply opens the block; the newlines after </think> are not content.
      {"<think>\nLet me add.\n</think>\n\nIt is 4.", false, "\nLet me add.\n", "It is 4."},
      // Qwen3 with thinking off renders an empty block in the prompt: a plain answer.
      {"It is 4.", false, "", "It is 4."},
      // DeepSeek-R1: the prompt opened the block.
      {"Two and two.\n</think>\n\nFour.", true, "Two and two.\n", "Four."},
      // A block never closed (cut by max_tokens): all reasoning.
      {"<think>still thinking <thi", false, "still thinking <thi", ""},
      {"thinking, cut", true, "thinking, cut", ""},
      // Leading whitespace before <think> is dropped with the tag; elsewhere tags are text.
      {"  \n<think>a</think>b", false, "a", "b"},
      {"Answer: <think> is a tag</think>", false, "", "Answer: <think> is a tag</think>"},
      {"<thinking>x", false, "", "<thinking>x"},
      {"<th", false, "", "<th"},
      {"", false, "", ""},
      {"   ", false, "", "   "},
      // Content after the block keeps its own inner newlines; an empty block gives no reasoning.
      {"<think></think>\n\nline 1\n\nline 2\n", false, "", "line 1\n\nline 2\n"},
      // The last </think> is not special: only the first closes the block.
      {"r</think>c</think>", true, "r", "c</think>"},
      // Multi-byte text around the tags passes through unchanged.
      {"<think>Zürich 日本</think>\n😀", false, "Zürich 日本", "😀"},
  };
  for (const Case& c : cases) {
    for (size_t piece : {c.reply.size() + 1, size_t{1}, size_t{2}, size_t{3}, size_t{5}, size_t{8}}) {
      const ReasoningDelta got = split_in_pieces(c.reply, c.in_reasoning, piece);
      EXPECT_EQ(got.reasoning, c.reasoning) << c.reply << " in pieces of " << piece;
      EXPECT_EQ(got.content, c.content) << c.reply << " in pieces of " << piece;
    }
  }
}

TEST(ReasoningSplit, ReleasesTextAsSoonAsItCannotBeATag) {
  ReasoningSplit split(true);
  EXPECT_EQ(split.add("abc").reasoning, "abc");
  EXPECT_EQ(split.add("de</th").reasoning, "de");  // "</th" may become </think>
  ReasoningDelta d = split.add("ink>\n\nok");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "ok");
  EXPECT_EQ(split.add(" more").content, " more");
  EXPECT_TRUE(split.finish().empty());
}

TEST(ReasoningSplit, KnowsTemplatesAndPromptsThatOpenABlock) {
  EXPECT_TRUE(template_has_reasoning("{{ m.content.split('</think>')[-1] }}"));
  EXPECT_FALSE(template_has_reasoning("{{ '<|im_start|>' + m.content }}"));
  EXPECT_TRUE(prompt_opens_reasoning("<｜Assistant｜><think>\n"));
  EXPECT_FALSE(prompt_opens_reasoning("<｜Assistant｜><think>\n</think>"));
  EXPECT_FALSE(prompt_opens_reasoning("<|im_start|>assistant\n"));
  EXPECT_TRUE(prompt_opens_reasoning("</think>old answer<|im_end|><|im_start|>assistant\n<think>\n"));
}

}  // namespace
}  // namespace lumen::server
