#pragma once
// The little of ZeroMQ both sides share: the process's one context, and whole multipart messages
// in and out of a socket as the wire format's frames.
#include <chrono>
#include <span>
#include <vector>

#include <zmq.hpp>

#include "kv_transfer/wire_format.h"

namespace lumen::kv_transfer {

// One context for every KV-transfer socket of the process (thread-safe, created on first use).
// It is never destroyed: zmq_ctx_term waits for every socket to close, and a socket left open at
// exit (a server a program forgot to stop) must not hang the process in a static destructor.
zmq::context_t& zmq_context();

// A frame as a message. Large frames (KV pages) are handed over, not copied: zmq frees them from
// its I/O thread once they are sent.
zmq::message_t frame_message(Frame frame);

// Sends `parts` as one multipart message, never blocking. False when the socket would block (the
// peer's queue is full; a ROUTER socket drops the message instead and says true).
bool send_message(zmq::socket_t& socket, std::vector<zmq::message_t>& parts);

// Every part of the next message, or none when no message is waiting. ZeroMQ delivers a multipart
// message whole or not at all, so once its first part is there the rest are too.
std::vector<zmq::message_t> receive_message(zmq::socket_t& socket);

// Waits up to `timeout` for a message to read. False on timeout or when a signal interrupted the
// wait; callers that keep a deadline wait again.
bool wait_readable(zmq::socket_t& socket, std::chrono::milliseconds timeout);

std::vector<FrameView> frame_views(std::span<const zmq::message_t> parts);

}  // namespace lumen::kv_transfer
