#include "sampling/stop_string_matcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <random>
#include <string>
#include <vector>

#include "util/error.h"

namespace lumen::sampling {
namespace {

// Feeds the pieces; returns what was emitted (each step appended) and whether it stopped. Also
// checks, after every piece, that nothing emitted so far contains any part of a stop string
// occurrence that later completes (emitted + held is always a prefix of the text).
struct Streamed {
  std::string emitted;
  bool stopped = false;
  std::vector<std::string> steps;
};

Streamed feed(StopStringMatcher& m, const std::vector<std::string>& pieces, bool flush = true) {
  Streamed run;
  for (const std::string& piece : pieces) {
    StopStringMatcher::Step step = m.push(piece);
    run.emitted += step.text;
    run.steps.push_back(step.text);
    if (step.stopped) {
      run.stopped = true;
      break;
    }
  }
  if (flush && !run.stopped) run.emitted += m.flush();
  return run;
}

TEST(StopStringMatcher, StopSpanningFourTokens) {
  StopStringMatcher m({"</answer>"});
  const Streamed r = feed(m, {"The result", " is 42</", "ans", "wer", ">trailing"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "The result is 42");
  // "</" was held back from the second piece, and nothing more was shown until the stop.
  EXPECT_EQ(r.steps, (std::vector<std::string>{"The result", " is 42", "", "", ""}));
  EXPECT_EQ(m.matched(), 0u);
  EXPECT_TRUE(m.push("more").text.empty());  // nothing after a stop
}

TEST(StopStringMatcher, StopSpanningTwoAndThreeTokens) {
  StopStringMatcher two({"\n\n"});
  EXPECT_EQ(feed(two, {"line one\n", "\nline two"}).emitted, "line one");
  StopStringMatcher three({"STOP"});
  const Streamed r = feed(three, {"go ST", "O", "Pped"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "go ");
}

TEST(StopStringMatcher, OverlappingStopsCutAtTheFirstCompleted) {
  // "ab" completes first (at the 3rd byte); "abc" would end later.
  StopStringMatcher m({"abc", "ab"});
  const Streamed r = feed(m, {"a", "a", "b", "c"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "a");
  EXPECT_EQ(m.matched(), 1u);
  // One piece holding everything gives the same answer.
  StopStringMatcher whole({"abc", "ab"});
  EXPECT_EQ(feed(whole, {"aabc"}).emitted, "a");
}

TEST(StopStringMatcher, AmongStopsEndingTogetherTheLongerCutsEarlier) {
  StopStringMatcher m({"b", "xab"});
  EXPECT_EQ(feed(m, {"zx", "ab"}).emitted, "z");
  EXPECT_EQ(m.matched(), 1u);
}

TEST(StopStringMatcher, AFailedPartialMatchIsReleased) {
  StopStringMatcher m({"abc"});
  StopStringMatcher::Step s1 = m.push("xxab");
  EXPECT_EQ(s1.text, "xx");  // "ab" may still become "abc"
  EXPECT_EQ(m.held_bytes(), 2u);
  StopStringMatcher::Step s2 = m.push("d");  // it did not
  EXPECT_EQ(s2.text, "abd");
  EXPECT_FALSE(s2.stopped);
  EXPECT_EQ(m.held_bytes(), 0u);
}

TEST(StopStringMatcher, APartialMatchFailingInsideANewStart) {
  // "aab" against "aac": after "aa" (held), "b" breaks it but "ab"... is not a prefix either;
  // then "aaa" holds only the last "aa".
  StopStringMatcher m({"aac"});
  EXPECT_EQ(m.push("aa").text, "");
  EXPECT_EQ(m.push("a").text, "a");  // "aaa": the tail "aa" may still become "aac"
  EXPECT_EQ(m.held_bytes(), 2u);
  const StopStringMatcher::Step s = m.push("c");
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.text, "");
}

TEST(StopStringMatcher, TheHeldTailIsFlushedAtTheEnd) {
  StopStringMatcher m({"END"});
  const Streamed r = feed(m, {"almost E", "N"});
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(r.emitted, "almost EN");
}

TEST(StopStringMatcher, MultiByteUtf8) {
  // "é" is C3 A9, "è" is C3 A8, "🙂" is F0 9F 99 82; a stop "é!" and text that shares its
  // first byte with it.
  StopStringMatcher m({"\xC3\xA9!"});
  const Streamed r =
      feed(m, {"caf\xC3\xA8 ", "caf\xC3\xA9", "\xF0\x9F\x99\x82", " ", "\xC3\xA9", "!", "tail"});
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.emitted, "caf\xC3\xA8 caf\xC3\xA9\xF0\x9F\x99\x82 ");
  // A stop string made of multi-byte characters, split between tokens.
  StopStringMatcher emoji({"\xF0\x9F\x99\x82\xF0\x9F\x99\x82"});
  const Streamed e = feed(emoji, {"hi \xF0\x9F\x99\x82", "\xF0\x9F\x99\x82", "!"});
  EXPECT_TRUE(e.stopped);
  EXPECT_EQ(e.emitted, "hi ");
  EXPECT_EQ(e.steps[0], "hi ");  // the first emoji is held: it may start the stop string
}

TEST(StopStringMatcher, EmptyStopsAreRefusedAndNoStopsPassEverything) {
  EXPECT_THROW(StopStringMatcher({"x", ""}), Error);
  StopStringMatcher none({});
  EXPECT_EQ(none.push("anything").text, "anything");
  EXPECT_EQ(none.held_bytes(), 0u);
}

// The reference: the text up to the earliest end of any stop occurrence, cut before the
// occurrence starting first among those ending there.
std::pair<std::string, bool> reference_cut(const std::string& text,
                                           const std::vector<std::string>& stops) {
  for (size_t end = 1; end <= text.size(); ++end) {
    size_t best = std::string::npos;
    for (const std::string& s : stops) {
      if (s.size() <= end && text.compare(end - s.size(), s.size(), s) == 0)
        best = std::min(best, end - s.size());
    }
    if (best != std::string::npos) return {text.substr(0, best), true};
  }
  return {text, false};
}

// Random text over a 3-letter alphabet (so stops occur and overlap often), random stops, random
// splits: the output never depends on the split, equals the reference, and while streaming only
// the longest tail that is a proper prefix of some stop is held.
TEST(StopStringMatcher, AgreesWithTheReferenceOnRandomSplits) {
  std::mt19937_64 rng(1);
  auto random_string = [&](size_t max_len) {
    std::string s(1 + rng() % max_len, 'a');
    for (char& c : s) c = static_cast<char>('a' + rng() % 3);
    return s;
  };
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops;
    for (size_t i = 0, n = 1 + rng() % 3; i < n; ++i) stops.push_back(random_string(5));
    const std::string text = random_string(30);
    std::vector<std::string> pieces;
    for (size_t at = 0; at < text.size();) {
      const size_t len =
          std::min(text.size() - at, static_cast<size_t>(rng() % 5));  // empty pieces too
      pieces.push_back(text.substr(at, len));
      at += len;
    }
    StopStringMatcher m(stops);
    std::string emitted, received;
    bool stopped = false;
    for (const std::string& piece : pieces) {
      received += piece;
      const StopStringMatcher::Step step = m.push(piece);
      emitted += step.text;
      if (step.stopped) {
        stopped = true;
        break;
      }
      // Held back: exactly the longest suffix of what was received that is a proper prefix of a
      // stop.
      size_t expect_held = 0;
      for (size_t k = 1; k <= received.size(); ++k) {
        for (const std::string& s : stops) {
          if (s.size() > k && s.compare(0, k, received, received.size() - k, k) == 0)
            expect_held = k;
        }
      }
      ASSERT_EQ(m.held_bytes(), expect_held) << "trial " << trial;
      ASSERT_EQ(emitted + received.substr(received.size() - expect_held), received);
    }
    if (!stopped) emitted += m.flush();
    const auto [expected, expected_stop] = reference_cut(text, stops);
    ASSERT_EQ(emitted, expected) << "trial " << trial << " text " << text;
    ASSERT_EQ(stopped, expected_stop) << "trial " << trial;
  }
}

// The worst case for a naive matcher: many long stop strings that almost match everywhere.
// Aho-Corasick does constant amortized work per byte, so 1 MB of text takes about 10 ms in
// release and 2 s under the sanitizers; the tail search this replaced compared every stop
// string at every byte and took minutes for 4 MB. The bound is loose (CI runs it under the
// sanitizers on a loaded machine): it only has to catch a return to that search.
TEST(StopStringMatcher, HostileStopsCostLinearTime) {
  std::vector<std::string> stops;
  for (int i = 0; i < 16; ++i) stops.push_back(std::string(255, 'a') + static_cast<char>('b' + i));
  StopStringMatcher m(stops);
  const std::string piece(4096, 'a');
  const auto start = std::chrono::steady_clock::now();
  size_t emitted = 0;
  for (int i = 0; i < 256; ++i) emitted += m.push(piece).text.size();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(m.held_bytes(), 255u);
  EXPECT_EQ(emitted + m.held_bytes(), 256u * 4096u);
  EXPECT_LT(seconds, 10.0);
  EXPECT_TRUE(m.push("c").stopped);
}

}  // namespace
}  // namespace lumen::sampling
