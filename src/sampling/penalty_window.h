#pragma once
// The tokens the penalties look at: the last `last_n` tokens of a sequence (prompt and output;
// -1: all of them, 0: none), with, per distinct token, how often it occurs in the window and
// how often as an output token. Sized by the distinct tokens in the window, not by the
// vocabulary, so a request with penalties costs a few KiB, not a vocabulary-sized array; and
// applying the penalties visits those tokens only.
//
// Storage: an open-addressing table (linear probing, backward-shift deletion, so there are no
// tombstones and no rehash as tokens leave a sliding window) and, for a finite window, a ring of
// the tokens in it. Neither allocates once it has grown to the window's size.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace lumen::sampling {

class PenaltyWindow {
 public:
  struct Entry {
    int32_t token = -1;        // -1: an empty slot
    int32_t count = 0;         // occurrences in the window
    int32_t output_count = 0;  // occurrences as an output token
  };

  explicit PenaltyWindow(int32_t last_n);

  // Appends a token (is_output: generated, not prompt); the oldest one leaves a full window.
  // Ids must be >= 0.
  void push(int32_t token, bool is_output);

  // Occurrences of `token` in the window (all, and as output).
  int32_t count(int32_t token) const;
  int32_t output_count(int32_t token) const;
  size_t distinct() const { return used_; }

  // f(const Entry&) for every distinct token in the window, in no particular order.
  template <typename F>
  void for_each(F&& f) const {
    for (const Entry& e : slots_) {
      if (e.token >= 0) f(e);
    }
  }

 private:
  struct Recent {
    int32_t token;
    bool is_output;
  };
  size_t home(int32_t token) const;
  const Entry* find(int32_t token) const;
  void add(int32_t token, bool is_output);
  void remove(int32_t token, bool is_output);
  void grow();

  int32_t last_n_;
  std::vector<Entry> slots_;  // capacity: a power of two, at most half full
  size_t used_ = 0;
  std::vector<Recent> ring_;  // the window, when finite; ring_[head_] is the oldest once full
  size_t head_ = 0;
};

}  // namespace lumen::sampling
