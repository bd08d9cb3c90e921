#pragma once
// An intrusive doubly linked list of block ids. The links live in one array owned by the pool
// (a block is in at most one list at a time: free, or evictable), so pushing, popping and
// unlinking any block are O(1) and never allocate. Taking a cached block off the LRU when a
// prefix lookup hits it is the reason this is a linked list and not a queue.
#include <cstdint>
#include <span>

namespace lumen::kv {

struct BlockLinks {
  int32_t prev = -1;
  int32_t next = -1;
};

class BlockList {
 public:
  bool empty() const { return size_ == 0; }
  int32_t size() const { return size_; }
  int32_t front() const { return head_; }  // -1 when empty
  int32_t back() const { return tail_; }

  void push_front(std::span<BlockLinks> links, int32_t id) {
    links[id] = {-1, head_};
    if (head_ >= 0)
      links[head_].prev = id;
    else
      tail_ = id;
    head_ = id;
    ++size_;
  }

  void push_back(std::span<BlockLinks> links, int32_t id) {
    links[id] = {tail_, -1};
    if (tail_ >= 0)
      links[tail_].next = id;
    else
      head_ = id;
    tail_ = id;
    ++size_;
  }

  // The caller guarantees that id is in this list.
  void remove(std::span<BlockLinks> links, int32_t id) {
    const BlockLinks l = links[id];
    if (l.prev >= 0)
      links[l.prev].next = l.next;
    else
      head_ = l.next;
    if (l.next >= 0)
      links[l.next].prev = l.prev;
    else
      tail_ = l.prev;
    links[id] = {};
    --size_;
  }

  int32_t pop_front(std::span<BlockLinks> links) {
    const int32_t id = head_;
    remove(links, id);
    return id;
  }

 private:
  int32_t head_ = -1;
  int32_t tail_ = -1;
  int32_t size_ = 0;
};

}  // namespace lumen::kv
