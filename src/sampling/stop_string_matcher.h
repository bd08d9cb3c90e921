#pragma once
// Stop strings on streamed text. Fed the decoded text of each new token, it says what may be
// shown now and whether a stop string was hit; it knows nothing of tokens, so a stop string may
// span any number of them.
//
// The rule: the output is the text up to the first place where a stop string ends, cut just
// before that occurrence (among occurrences ending at the same byte, before the one that starts
// first). This depends only on the text, never on how it was split into pieces: a stop string
// is complete as soon as its last byte arrives, whatever else might have matched later.
//
// While nothing has matched, only the longest tail of the text that is a proper prefix of some
// stop string is held back, since it may still become one; everything before it is emitted at
// once. Nothing of a matched stop string is ever emitted. Matching is on bytes: with UTF-8
// text and stop strings that are whole UTF-8 (as JSON strings are), a match and a held-back
// tail start on a character boundary, so what is emitted is whole characters.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lumen::sampling {

class StopStringMatcher {
 public:
  struct Step {
    std::string text;      // safe to show now
    bool stopped = false;  // a stop string was completed: `text` is the last of the output
  };

  // Stop strings must not be empty (lumen::Error).
  explicit StopStringMatcher(std::vector<std::string> stops);

  // The next piece of text. After a stop, returns nothing more.
  Step push(std::string_view piece);
  // The held-back tail, at the end of a stream that did not stop (empty after a stop).
  std::string flush();

  bool stopped() const { return matched_.has_value(); }
  // The index in `stops` of the stop string that ended the text.
  std::optional<size_t> matched() const { return matched_; }
  // Bytes received but not yet emitted.
  size_t held_bytes() const { return held_.size(); }

 private:
  size_t tail_to_hold() const;

  std::vector<std::string> stops_;
  size_t longest_ = 0;  // the longest stop string's length
  std::string held_;
  std::optional<size_t> matched_;
};

}  // namespace lumen::sampling
