#include "kv_transfer/zmq_io.h"

#include <cerrno>
#include <memory>
#include <utility>

namespace lumen::kv_transfer {
namespace {

// Below this a copy costs less than the bookkeeping of handing the buffer to zmq.
constexpr size_t kCopyBelowBytes = 64 * 1024;

void free_frame(void* /*data*/, void* hint) { delete static_cast<Frame*>(hint); }

}  // namespace

zmq::context_t& zmq_context() {
  // Two I/O threads: a prefill process serves and a decode process fetches several prompts at once,
  // and one thread moves about a gigabyte a second.
  static zmq::context_t* const context = new zmq::context_t(2);
  return *context;
}

zmq::message_t frame_message(Frame frame) {
  if (frame.size() < kCopyBelowBytes) return zmq::message_t(frame.data(), frame.size());
  auto owned = std::make_unique<Frame>(std::move(frame));
  zmq::message_t message(owned->data(), owned->size(), free_frame, owned.get());
  owned.release();  // zmq owns it now: free_frame deletes it
  return message;
}

bool send_message(zmq::socket_t& socket, std::vector<zmq::message_t>& parts) {
  for (size_t i = 0; i < parts.size(); ++i) {
    zmq::send_flags flags = zmq::send_flags::dontwait;
    if (i + 1 < parts.size()) flags = flags | zmq::send_flags::sndmore;
    // In practice only the first part finds the socket full: the high-water mark counts whole
    // messages, so zmq takes the rest of one it has started.
    if (!socket.send(parts[i], flags)) return false;
  }
  return true;
}

std::vector<zmq::message_t> receive_message(zmq::socket_t& socket) {
  std::vector<zmq::message_t> parts;
  do {
    zmq::message_t part;
    if (!socket.recv(part, zmq::recv_flags::dontwait)) break;
    parts.push_back(std::move(part));
  } while (parts.back().more());
  return parts;
}

bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout) {
  zmq::pollitem_t item{socket.handle(), 0, ZMQ_POLLIN, 0};
  try {
    return zmq::poll(&item, 1, timeout) > 0 && (item.revents & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t& e) {
    if (e.num() == EINTR) return false;
    throw;
  }
}

std::vector<FrameView> frame_views(std::span<const zmq::message_t> parts) {
  std::vector<FrameView> views;
  views.reserve(parts.size());
  for (const zmq::message_t& part : parts) views.emplace_back(part.data<uint8_t>(), part.size());
  return views;
}

}  // namespace lumen::kv_transfer
