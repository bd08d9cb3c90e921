// gpt-oss's harmony replies split into reasoning_content and content (server/harmony_split.h):
// the same split whether the reply arrives whole or a byte at a time (a marker cut anywhere
// between two chunks is held, never sent as text); analysis to reasoning, final and commentary
// preambles to content, a tool call kept whole as text, plain text without headers as content,
// and which templates are harmony's.
#include "server/harmony_split.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/reply_split.h"

namespace lumen::server {
namespace {

ReasoningDelta split_in_pieces(const std::string& reply, size_t piece) {
  HarmonySplit split;
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
  std::string reply, reasoning, content;
};

TEST(HarmonySplit, SplitsAlikeWholeOrInAnyPieces) {
  const std::vector<Case> cases = {
      // The usual reply: reasoning, then the final answer (its <|return|> is not in the text).
      {"<|channel|>analysis<|message|>User asks 2+2. Simple.<|end|><|start|>assistant<|channel|>final<|message|>"
       "2 + 2 = 4.",
       "User asks 2+2. Simple.", "2 + 2 = 4."},
      // A final answer only (reasoning effort low, or a model that skips it).
      {"<|channel|>final<|message|>Hello!", "", "Hello!"},
      // Two analysis messages and a commentary preamble, all in order.
      {"<|channel|>analysis<|message|>First.<|end|><|start|>assistant<|channel|>analysis<|message|> Second."
       "<|end|><|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
       "<|start|>assistant<|channel|>final<|message|>Done.",
       "First. Second.", "Let me check.Done."},
      // A tool call: kept whole as text, its header in one form, for the tool-call parser.
      {"<|channel|>analysis<|message|>Need weather.<|end|><|start|>assistant<|channel|>commentary "
       "to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}",
       "Need weather.", "<|channel|>commentary to=functions.get_weather<|message|>{\"city\":\"Paris\"}"},
      // The reply's first header may start with its recipient (the prompt ended in
      // <|start|>assistant); later ones may name it after the role.
      {"to=functions.get_time<|channel|>commentary json<|message|>{}", "",
       "<|channel|>commentary to=functions.get_time<|message|>{}"},
      {"<|channel|>analysis<|message|>Hm.<|end|><|start|>assistant to=functions.f<|channel|>commentary<|message|>{}",
       "Hm.", "<|channel|>commentary to=functions.f<|message|>{}"},
      // A message to the assistant is no call (gpt-oss sometimes writes one before its analysis).
      {"<|channel|>commentary to=assistant<|message|>ok<|end|>", "", "ok"},
      // Plain text that begins like a recipient is still text.
      {"tomorrow, maybe", "", "tomorrow, maybe"},
      // Text that is no marker where a header should be: the model wrote plain text.
      {"Just an answer < 5 and <| odd.", "", "Just an answer < 5 and <| odd."},
      // Marker-like text inside a message stays text; an unfinished message is what it has.
      {"<|channel|>final<|message|>Use <|end to close and a<b", "", "Use <|end to close and a<b"},
      // A reply cut inside a header (max_tokens): nothing of the header is text.
      {"<|channel|>analysis<|message|>Thinking.<|end|><|start|>assistant<|chan", "Thinking.", ""},
  };
  for (const Case& c : cases) {
    for (size_t piece : {c.reply.size(), size_t{1}, size_t{2}, size_t{5}}) {
      const ReasoningDelta d = split_in_pieces(c.reply, std::max<size_t>(piece, 1));
      EXPECT_EQ(d.reasoning, c.reasoning) << c.reply << " in pieces of " << piece;
      EXPECT_EQ(d.content, c.content) << c.reply << " in pieces of " << piece;
    }
  }
}

TEST(HarmonySplit, StreamsTheReasoningBeforeTheReplyEnds) {
  HarmonySplit split;
  EXPECT_TRUE(split.add("<|channel|>analysis<|mess").empty());  // a header is held to its end
  ReasoningDelta d = split.add("age|>Thinking hard<|e");
  EXPECT_EQ(d.reasoning, "Thinking hard");  // "<|e" may still become <|end|>
  d = split.add("nd|><|start|>assistant<|channel|>final<|message|>Answer");
  EXPECT_EQ(d.reasoning, "");
  EXPECT_EQ(d.content, "Answer");
}

TEST(HarmonySplit, RecognisesHarmonyTemplates) {
  EXPECT_TRUE(template_is_harmony("{{- '<|start|>assistant<|channel|>final<|message|>' }}"));
  EXPECT_FALSE(template_is_harmony("<|im_start|>assistant\n<think>\n</think>"));
  ReplySplit reply(ReasoningSyntax::Harmony, false);
  EXPECT_EQ(reply.add("<|channel|>final<|message|>ok").content, "ok");
  ReplySplit think(ReasoningSyntax::ThinkTags, false);
  EXPECT_EQ(think.add("<think>a</think>b").reasoning, "a");
}

}  // namespace
}  // namespace lumen::server
