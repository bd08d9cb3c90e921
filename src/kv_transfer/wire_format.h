#pragma once
// The KV transfer's messages as bytes, apart from any socket: pure functions from a fetch or an
// answer to the frames of one multipart ZeroMQ message and back, so that the decoders, which
// face the other machine's bytes, can be tested (and fuzzed) alone.
//
// Wire format, version 1. Every integer is little-endian; every message is one multipart message.
//
// Fetch (decode instance -> prefill instance), 2 frames:
//   frame 0, 48 bytes:  0 "LKVT"   4 u32 version   8 u64 request_id   16 u64 cache_salt
//                      24 u64 format   32 i64 n_known   40 u64 n_tokens
//   frame 1: n_tokens x i32, the asker's prompt
//
// Answer (prefill -> decode), frame 0 begins with 12 bytes: 0 "LKVT"   4 u32 version   8 u32 status
//   NotFound (2): that frame alone.
//   Error (3):    that frame, then one frame of UTF-8 text, at most kMaxErrorBytes.
//   Found (1):    frame 0 goes on to 60 bytes:
//                   12 u64 format   20 u64 cache_salt   28 i64 n_known   36 u64 n_tokens
//                   44 u64 page_bytes (0 when there are no pages)   52 u64 n_pages
//                 frame 1: n_tokens x i32, the tokens the pages complete
//                 frames 2 .. n_pages + 1: one KV cache page each, page_bytes bytes
//
// One frame per page keeps every frame small (a cache block, not the whole prompt's K/V), so a
// receiver can cap the size of a frame (ZMQ_MAXMSGSIZE) at what it legitimately expects.
// Decoding checks everything before it allocates: magic, version, frame count, every frame's size
// against the counts in the header, the counts against their bounds, 0 <= n_known <= n_tokens.
// A change to any of this is a new version; a peer speaking another version is refused.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kv_transfer/kv_fetch.h"
#include "lumen/prompt_kv.h"

namespace lumen::kv_transfer {

inline constexpr uint32_t kWireVersion = 1;
// A prompt of a million tokens is beyond any context Lumen serves; the bound keeps a token frame
// (4 MiB at most) a size that a receiver can accept without trusting the sender.
inline constexpr uint64_t kMaxTokens = uint64_t{1} << 20;
inline constexpr size_t kMaxErrorBytes = 1024;
inline constexpr size_t kFetchHeaderBytes = 48;
inline constexpr size_t kAnswerStatusBytes = 12;
inline constexpr size_t kFoundHeaderBytes = 60;
// The largest tokens frame, in a fetch or an answer: the largest frame a fetch legitimately has.
inline constexpr size_t kMaxTokenFrameBytes = kMaxTokens * sizeof(int32_t);

using Frame = std::vector<uint8_t>;
using FrameView = std::span<const uint8_t>;

std::vector<FrameView> frame_views(const std::vector<Frame>& frames);

// Throws lumen::Error when the fetch is past the bounds (too many tokens, n_known out of range).
std::vector<Frame> encode_fetch(const KvFetch& fetch);
// Throws lumen::Error ("malformed KV fetch: ...") naming what is wrong.
KvFetch decode_fetch(std::span<const FrameView> frames);

enum class AnswerStatus : uint32_t { Found = 1, NotFound = 2, Error = 3 };

struct FetchAnswer {
  AnswerStatus status = AnswerStatus::NotFound;
  PromptKv kv;        // when Found
  std::string error;  // when Error: the server's message, on one line
};

// What the receiver accepts: its own page size, and how many pages it will take.
struct AnswerBounds {
  size_t page_bytes = 0;
  size_t max_pages = 0;
};

// Moves the pages into the frames (no copy). Throws lumen::Error when `kv` cannot be sent as it
// is: past the token bound, n_known out of range, pages of different (or zero) sizes.
std::vector<Frame> encode_found(PromptKv kv);
std::vector<Frame> encode_not_found();
// Longer messages are cut to kMaxErrorBytes (at a UTF-8 character boundary).
std::vector<Frame> encode_error(std::string_view message);
// Throws lumen::Error ("malformed KV answer: ...") when the frames are not a well-formed answer
// or a Found answer is past `bounds` (another page size, more than max_pages pages).
FetchAnswer decode_answer(std::span<const FrameView> frames, const AnswerBounds& bounds);

}  // namespace lumen::kv_transfer
