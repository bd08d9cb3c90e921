#include "sampling/stop_string_matcher.h"

#include <algorithm>
#include <deque>

#include "util/error.h"

namespace lumen::sampling {

StopStringMatcher::StopStringMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {
  nodes_.emplace_back();
  for (size_t i = 0; i < stops_.size(); ++i) {
    if (stops_[i].empty()) fail("stop strings must not be empty");
    int32_t node = 0;
    for (unsigned char byte : stops_[i]) {
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(nodes_.size());
        nodes_.emplace_back();
        nodes_.back().depth = nodes_[static_cast<size_t>(node)].depth + 1;
        nodes_[static_cast<size_t>(node)].next.emplace_back(byte, next);
      }
      node = next;
    }
    if (nodes_[static_cast<size_t>(node)].stop < 0) nodes_[static_cast<size_t>(node)].stop = static_cast<int32_t>(i);
  }
  // Failure and output links, breadth first (a node's fail target is shallower, so it is done).
  std::deque<int32_t> queue;
  for (const auto& [byte, next] : nodes_[0].next) queue.push_back(next);
  for (Node& n : nodes_) n.output = n.stop;
  while (!queue.empty()) {
    const int32_t node = queue.front();
    queue.pop_front();
    for (const auto& [byte, next] : nodes_[static_cast<size_t>(node)].next) {
      int32_t f = nodes_[static_cast<size_t>(node)].fail;
      while (f != 0 && child(f, byte) < 0) f = nodes_[static_cast<size_t>(f)].fail;
      const int32_t target = child(f, byte);
      Node& n = nodes_[static_cast<size_t>(next)];
      n.fail = target >= 0 && target != next ? target : 0;
      if (n.output < 0) n.output = nodes_[static_cast<size_t>(n.fail)].output;
      queue.push_back(next);
    }
  }
}

int32_t StopStringMatcher::child(int32_t node, unsigned char byte) const {
  for (const auto& [b, next] : nodes_[static_cast<size_t>(node)].next) {
    if (b == byte) return next;
  }
  return -1;
}

int32_t StopStringMatcher::step(int32_t node, unsigned char byte) const {
  for (;;) {
    const int32_t next = child(node, byte);
    if (next >= 0) return next;
    if (node == 0) return 0;
    node = nodes_[static_cast<size_t>(node)].fail;
  }
}

StopStringMatcher::Step StopStringMatcher::push(std::string_view piece) {
  Step step_out;
  if (stopped() || piece.empty()) return step_out;
  // held_ is the automaton's state spelled out; the text before it was emitted already.
  const size_t old_size = held_.size();
  held_.append(piece);
  for (size_t i = old_size; i < held_.size(); ++i) {
    state_ = step(state_, static_cast<unsigned char>(held_[i]));
    const int32_t found = nodes_[static_cast<size_t>(state_)].output;
    if (found < 0) continue;
    // The longest stop string ending at this byte (the one starting first) ends the text.
    matched_ = static_cast<size_t>(found);
    step_out.text.assign(held_, 0, i + 1 - stops_[static_cast<size_t>(found)].size());
    step_out.stopped = true;
    held_.clear();
    return step_out;
  }
  const size_t hold = nodes_[static_cast<size_t>(state_)].depth;
  step_out.text.assign(held_, 0, held_.size() - hold);
  held_.erase(0, held_.size() - hold);
  return step_out;
}

std::string StopStringMatcher::flush() {
  std::string rest;
  rest.swap(held_);
  state_ = 0;
  return rest;
}

}  // namespace lumen::sampling
