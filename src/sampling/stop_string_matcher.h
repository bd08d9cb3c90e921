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
//
// Matching runs an Aho-Corasick automaton over the bytes: constant amortized work per byte
// whatever the number and length of the stop strings (a hostile request cannot make it slow),
// and the automaton's state is exactly the tail to hold back (its depth).
#include <cstddef>
#include <cstdint>
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
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // trie edges
    int32_t fail = 0;      // the longest proper suffix of this node's path that is a trie node
    int32_t output = -1;   // the longest stop string ending here: this node's, or via fail links
    int32_t stop = -1;     // the stop string whose whole text is this node's path
    size_t depth = 0;
  };
  int32_t child(int32_t node, unsigned char byte) const;
  int32_t step(int32_t node, unsigned char byte) const;  // the automaton's transition

  std::vector<std::string> stops_;
  std::vector<Node> nodes_;  // nodes_[0]: the root
  int32_t state_ = 0;        // the longest suffix of the text so far that begins a stop string
  std::string held_;         // always the last nodes_[state_].depth bytes
  std::optional<size_t> matched_;
};

}  // namespace lumen::sampling
