#include "kv_transfer/kv_transfer_client.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "kv_transfer/curve_auth.h"
#include "kv_transfer/wire_format.h"
#include "kv_transfer/zmq_io.h"
#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

using Clock = std::chrono::steady_clock;

zmq::socket_t connect_dealer(const std::string& endpoint, size_t page_bytes, const TransferKey* key) {
  zmq::socket_t socket(zmq_context(), zmq::socket_type::dealer);
  // Closing must not wait for a fetch that never left (the server is down): the caller's timeout
  // is the whole wait.
  socket.set(zmq::sockopt::linger, 0);
  // No frame of a legitimate answer is larger than a page or the tokens at their bound; zmq drops
  // a connection that sends one, before allocating it.
  const size_t largest_frame = std::max(page_bytes, kMaxTokenFrameBytes);
  const auto cap = static_cast<size_t>(std::numeric_limits<int64_t>::max());
  socket.set(zmq::sockopt::maxmsgsize, static_cast<int64_t>(std::min(largest_frame, cap)));
  if (key) make_curve_client(socket, *key);
  try {
    socket.connect(endpoint);
  } catch (const zmq::error_t& e) {
    fail("cannot connect: {}", e.what());
  }
  return socket;
}

std::vector<zmq::message_t> await_answer(zmq::socket_t& socket, Clock::time_point deadline,
                                         std::chrono::milliseconds timeout) {
  for (;;) {
    const auto left =
        std::max(std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()), std::chrono::milliseconds{0});
    if (wait_readable(socket, left)) {
      std::vector<zmq::message_t> parts = receive_message(socket);
      if (!parts.empty()) return parts;
    }
    if (Clock::now() >= deadline) {
      fail("no answer within {} ms (is a prefill instance serving there?)", timeout.count());
    }
  }
}

// The server chose the answer; this checks that it answers this fetch before anyone imports it.
void check_answers_fetch(const PromptKv& kv, const KvFetch& fetch) {
  if (kv.format != fetch.format) {
    fail("the answer's KV format is {:#018x}, the fetch asked for {:#018x}", kv.format, fetch.format);
  }
  if (kv.cache_salt != fetch.cache_salt) {
    fail("the answer is for cache_salt {:#x}, the fetch's is {:#x}", kv.cache_salt, fetch.cache_salt);
  }
  if (kv.tokens.size() > fetch.tokens.size() || !std::equal(kv.tokens.begin(), kv.tokens.end(), fetch.tokens.begin())) {
    fail("the answer's {} tokens do not begin the fetch's prompt of {}", kv.tokens.size(), fetch.tokens.size());
  }
}

std::optional<PromptKv> fetch_or_throw(const std::string& endpoint, const KvFetch& fetch, size_t page_bytes,
                                       size_t max_pages, std::chrono::milliseconds timeout, const TransferKey* key) {
  if (page_bytes == 0) fail("page_bytes is 0");
  const Clock::time_point deadline = Clock::now() + timeout;
  std::vector<zmq::message_t> request;
  for (Frame& frame : encode_fetch(fetch)) request.push_back(frame_message(std::move(frame)));
  zmq::socket_t socket = connect_dealer(endpoint, page_bytes, key);
  // A connecting DEALER queues the message for the connection it keeps trying to make.
  if (!send_message(socket, request)) fail("could not queue the fetch");
  const std::vector<zmq::message_t> parts = await_answer(socket, deadline, timeout);
  FetchAnswer answer = decode_answer(frame_views(parts), AnswerBounds{page_bytes, max_pages});
  switch (answer.status) {
    case AnswerStatus::NotFound: return std::nullopt;
    case AnswerStatus::Error: fail("the prefill instance answered with an error: {}", answer.error);
    case AnswerStatus::Found: break;
  }
  check_answers_fetch(answer.kv, fetch);
  return std::move(answer.kv);
}

}  // namespace

std::optional<PromptKv> fetch_prompt_kv(const std::string& endpoint, const KvFetch& fetch, size_t page_bytes,
                                        size_t max_pages, std::chrono::milliseconds timeout, const TransferKey* key) {
  try {
    return fetch_or_throw(endpoint, fetch, page_bytes, max_pages, timeout, key);
  } catch (const Error& e) {
    fail("KV fetch of request {} from {}: {}", fetch.request_id, endpoint, e.what());
  } catch (const zmq::error_t& e) {
    fail("KV fetch of request {} from {}: {}", fetch.request_id, endpoint, e.what());
  }
}

}  // namespace lumen::kv_transfer
