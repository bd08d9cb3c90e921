#include "proxy/relay_queue.h"

#include <utility>

namespace lumen::proxy {

bool RelayQueue::open(int status, std::string content_type) {
  std::lock_guard<std::mutex> lock(mutex_);
  has_head_ = true;
  status_ = status;
  content_type_ = std::move(content_type);
  changed_.notify_all();
  return !abandoned_;
}

bool RelayQueue::push(const char* data, size_t size) {
  std::unique_lock<std::mutex> lock(mutex_);
  // A chunk may pass the bound when nothing waits: the bound is on what piles up, not on how
  // httplib happens to cut the body.
  changed_.wait(lock, [&] { return abandoned_ || queued_bytes_ == 0 || queued_bytes_ + size <= capacity_bytes_; });
  if (abandoned_) return false;
  chunks_.emplace_back(data, size);
  queued_bytes_ += size;
  changed_.notify_all();
  return true;
}

void RelayQueue::close(httplib::Error error) {
  std::lock_guard<std::mutex> lock(mutex_);
  closed_ = true;
  error_ = error;
  changed_.notify_all();
}

RelayQueue::State RelayQueue::wait_for_head(std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return has_head_ || closed_; });
  if (has_head_) return State::Open;
  return closed_ ? State::Closed : State::Waiting;
}

int RelayQueue::status() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return status_;
}

std::string RelayQueue::content_type() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return content_type_;
}

httplib::Error RelayQueue::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

RelayQueue::Taken RelayQueue::take(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait_for(lock, timeout, [&] { return !chunks_.empty() || closed_; });
  Taken taken;
  while (!chunks_.empty()) {
    if (taken.bytes.empty()) {
      taken.bytes = std::move(chunks_.front());
    } else {
      taken.bytes += chunks_.front();
    }
    chunks_.pop_front();
  }
  queued_bytes_ = 0;
  taken.ended = closed_;
  taken.complete = closed_ && error_ == httplib::Error::Success;
  changed_.notify_all();  // room for a blocked push
  return taken;
}

bool RelayQueue::wait_closed(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return closed_; });
}

void RelayQueue::abandon() {
  std::lock_guard<std::mutex> lock(mutex_);
  abandoned_ = true;
  chunks_.clear();
  queued_bytes_ = 0;
  changed_.notify_all();
}

}  // namespace lumen::proxy
