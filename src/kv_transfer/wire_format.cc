#include "kv_transfer/wire_format.h"

#include <algorithm>
#include <array>
#include <utility>

#include "util/error.h"

namespace lumen::kv_transfer {
namespace {

constexpr std::array<uint8_t, 4> kMagic = {'L', 'K', 'V', 'T'};

// Appends little-endian integers whatever the host's byte order.
class LeWriter {
 public:
  explicit LeWriter(size_t size) { bytes_.reserve(size); }
  void magic() { bytes_.insert(bytes_.end(), kMagic.begin(), kMagic.end()); }
  void u32(uint32_t v) {
    for (int shift = 0; shift < 32; shift += 8) bytes_.push_back(static_cast<uint8_t>(v >> shift));
  }
  void u64(uint64_t v) {
    for (int shift = 0; shift < 64; shift += 8) bytes_.push_back(static_cast<uint8_t>(v >> shift));
  }
  Frame take() { return std::move(bytes_); }

 private:
  Frame bytes_;
};

// Reads a frame whose size the caller has already checked; reading past it is a bug, not input.
class LeReader {
 public:
  explicit LeReader(FrameView bytes) : bytes_(bytes) {}
  bool magic_matches() {
    const FrameView got = take(kMagic.size());
    return std::equal(got.begin(), got.end(), kMagic.begin());
  }
  uint32_t u32() {
    const FrameView b = take(4);
    uint32_t v = 0;
    for (size_t i = 0; i < 4; ++i) v |= uint32_t{b[i]} << (8 * i);
    return v;
  }
  uint64_t u64() {
    const FrameView b = take(8);
    uint64_t v = 0;
    for (size_t i = 0; i < 8; ++i) v |= uint64_t{b[i]} << (8 * i);
    return v;
  }
  int64_t i64() { return static_cast<int64_t>(u64()); }

 private:
  FrameView take(size_t n) {
    if (bytes_.size() - at_ < n) fail("KV transfer: internal error: read past a checked frame");
    const FrameView out = bytes_.subspan(at_, n);
    at_ += n;
    return out;
  }
  FrameView bytes_;
  size_t at_ = 0;
};

// The magic and version every message starts with. `what` begins every error message.
void read_preamble(LeReader& reader, const char* what) {
  if (!reader.magic_matches()) fail("{}: bad magic (not a Lumen KV transfer message)", what);
  const uint32_t version = reader.u32();
  if (version != kWireVersion) fail("{}: wire version {} (this build speaks {})", what, version, kWireVersion);
}

void write_preamble(LeWriter& writer) {
  writer.magic();
  writer.u32(kWireVersion);
}

void check_token_counts(const char* what, uint64_t n_tokens, int64_t n_known) {
  if (n_tokens > kMaxTokens) fail("{}: {} tokens, more than the bound {}", what, n_tokens, kMaxTokens);
  if (n_known < 0 || static_cast<uint64_t>(n_known) > n_tokens) {
    fail("{}: n_known {} is outside [0, {}] (the number of tokens)", what, n_known, n_tokens);
  }
}

Frame encode_tokens(const std::vector<int32_t>& tokens) {
  LeWriter writer(tokens.size() * sizeof(int32_t));
  for (const int32_t t : tokens) writer.u32(static_cast<uint32_t>(t));
  return writer.take();
}

std::vector<int32_t> decode_tokens(const char* what, FrameView frame, uint64_t n_tokens) {
  // n_tokens is within kMaxTokens here, so the product cannot overflow.
  if (frame.size() != n_tokens * sizeof(int32_t)) {
    fail("{}: the tokens frame is {} bytes; {} tokens take {}", what, frame.size(), n_tokens,
         n_tokens * sizeof(int32_t));
  }
  std::vector<int32_t> tokens(n_tokens);
  LeReader reader(frame);
  for (int32_t& t : tokens) t = static_cast<int32_t>(reader.u32());
  return tokens;
}

// A server's message is shown to people and written to logs: one line, no terminal controls.
std::string printable_line(FrameView bytes) {
  std::string out(bytes.begin(), bytes.end());
  for (char& c : out) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) c = ' ';
  }
  return out;
}

FetchAnswer decode_found(std::span<const FrameView> frames, const AnswerBounds& bounds) {
  constexpr const char* kWhat = "malformed KV answer";
  if (frames[0].size() != kFoundHeaderBytes) {
    fail("malformed KV answer: a Found header is {} bytes, this one {}", kFoundHeaderBytes, frames[0].size());
  }
  LeReader reader(frames[0].subspan(kAnswerStatusBytes));
  FetchAnswer answer;
  answer.status = AnswerStatus::Found;
  PromptKv& kv = answer.kv;
  kv.format = reader.u64();
  kv.cache_salt = reader.u64();
  kv.n_known = reader.i64();
  const uint64_t n_tokens = reader.u64();
  const uint64_t page_bytes = reader.u64();
  const uint64_t n_pages = reader.u64();
  check_token_counts(kWhat, n_tokens, kv.n_known);
  if (n_pages > bounds.max_pages) {
    fail("KV answer: {} pages, more than the {} asked for at most", n_pages, bounds.max_pages);
  }
  if (n_pages == 0 && page_bytes != 0) fail("malformed KV answer: page_bytes {} with no pages", page_bytes);
  if (n_pages > 0 && page_bytes != bounds.page_bytes) {
    fail("KV answer: pages of {} bytes, this cache's are {}", page_bytes, bounds.page_bytes);
  }
  if (frames.size() < 2 || frames.size() - 2 != n_pages) {
    fail("malformed KV answer: {} frames; a Found answer with {} pages has {}", frames.size(), n_pages, 2 + n_pages);
  }
  for (size_t i = 0; i < n_pages; ++i) {
    if (frames[2 + i].size() != page_bytes) {
      fail("malformed KV answer: page {} is {} bytes, the header says {}", i, frames[2 + i].size(), page_bytes);
    }
  }
  kv.tokens = decode_tokens(kWhat, frames[1], n_tokens);
  kv.pages.reserve(n_pages);
  for (size_t i = 0; i < n_pages; ++i) kv.pages.emplace_back(frames[2 + i].begin(), frames[2 + i].end());
  return answer;
}

}  // namespace

std::vector<FrameView> frame_views(const std::vector<Frame>& frames) {
  return std::vector<FrameView>(frames.begin(), frames.end());
}

std::vector<Frame> encode_fetch(const KvFetch& fetch) {
  check_token_counts("KV fetch", fetch.tokens.size(), fetch.n_known);
  LeWriter header(kFetchHeaderBytes);
  write_preamble(header);
  header.u64(fetch.request_id);
  header.u64(fetch.cache_salt);
  header.u64(fetch.format);
  header.u64(static_cast<uint64_t>(fetch.n_known));
  header.u64(fetch.tokens.size());
  std::vector<Frame> frames;
  frames.push_back(header.take());
  frames.push_back(encode_tokens(fetch.tokens));
  return frames;
}

KvFetch decode_fetch(std::span<const FrameView> frames) {
  constexpr const char* kWhat = "malformed KV fetch";
  if (frames.size() != 2) fail("malformed KV fetch: {} frames, a fetch has 2 (header, tokens)", frames.size());
  if (frames[0].size() != kFetchHeaderBytes) {
    fail("malformed KV fetch: the header frame is {} bytes, a fetch header is {}", frames[0].size(), kFetchHeaderBytes);
  }
  LeReader reader(frames[0]);
  read_preamble(reader, kWhat);
  KvFetch fetch;
  fetch.request_id = reader.u64();
  fetch.cache_salt = reader.u64();
  fetch.format = reader.u64();
  fetch.n_known = reader.i64();
  const uint64_t n_tokens = reader.u64();
  check_token_counts(kWhat, n_tokens, fetch.n_known);
  fetch.tokens = decode_tokens(kWhat, frames[1], n_tokens);
  return fetch;
}

std::vector<Frame> encode_found(PromptKv kv) {
  check_token_counts("KV answer", kv.tokens.size(), kv.n_known);
  const size_t page_bytes = kv.pages.empty() ? 0 : kv.pages.front().size();
  for (size_t i = 0; i < kv.pages.size(); ++i) {
    if (kv.pages[i].empty()) fail("KV answer: page {} is empty", i);
    if (kv.pages[i].size() != page_bytes) {
      fail("KV answer: page {} is {} bytes, page 0 is {}", i, kv.pages[i].size(), page_bytes);
    }
  }
  LeWriter header(kFoundHeaderBytes);
  write_preamble(header);
  header.u32(static_cast<uint32_t>(AnswerStatus::Found));
  header.u64(kv.format);
  header.u64(kv.cache_salt);
  header.u64(static_cast<uint64_t>(kv.n_known));
  header.u64(kv.tokens.size());
  header.u64(page_bytes);
  header.u64(kv.pages.size());
  std::vector<Frame> frames;
  frames.reserve(2 + kv.pages.size());
  frames.push_back(header.take());
  frames.push_back(encode_tokens(kv.tokens));
  for (std::vector<uint8_t>& page : kv.pages) frames.push_back(std::move(page));
  return frames;
}

std::vector<Frame> encode_not_found() {
  LeWriter header(kAnswerStatusBytes);
  write_preamble(header);
  header.u32(static_cast<uint32_t>(AnswerStatus::NotFound));
  return {header.take()};
}

std::vector<Frame> encode_error(std::string_view message) {
  if (message.size() > kMaxErrorBytes) {
    size_t cut = kMaxErrorBytes;
    // Back off over UTF-8 continuation bytes (10xxxxxx) so no character is cut in half.
    while (cut > 0 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80) --cut;
    message = message.substr(0, cut);
  }
  LeWriter header(kAnswerStatusBytes);
  write_preamble(header);
  header.u32(static_cast<uint32_t>(AnswerStatus::Error));
  return {header.take(), Frame(message.begin(), message.end())};
}

FetchAnswer decode_answer(std::span<const FrameView> frames, const AnswerBounds& bounds) {
  if (frames.empty()) fail("malformed KV answer: no frames");
  if (frames[0].size() < kAnswerStatusBytes) {
    fail("malformed KV answer: the header frame is {} bytes, shorter than {}", frames[0].size(), kAnswerStatusBytes);
  }
  LeReader reader(frames[0]);
  read_preamble(reader, "malformed KV answer");
  const uint32_t status = reader.u32();
  switch (status) {
    case static_cast<uint32_t>(AnswerStatus::Found): return decode_found(frames, bounds);
    case static_cast<uint32_t>(AnswerStatus::NotFound):
      if (frames.size() != 1 || frames[0].size() != kAnswerStatusBytes) {
        fail("malformed KV answer: a NotFound answer is one frame of {} bytes", kAnswerStatusBytes);
      }
      return FetchAnswer{};
    case static_cast<uint32_t>(AnswerStatus::Error): {
      if (frames.size() != 2 || frames[0].size() != kAnswerStatusBytes) {
        fail("malformed KV answer: an Error answer is a {}-byte header and a message frame", kAnswerStatusBytes);
      }
      if (frames[1].size() > kMaxErrorBytes) {
        fail("malformed KV answer: an error message of {} bytes, more than {}", frames[1].size(), kMaxErrorBytes);
      }
      FetchAnswer answer;
      answer.status = AnswerStatus::Error;
      answer.error = printable_line(frames[1]);
      return answer;
    }
    default: fail("malformed KV answer: unknown status {}", status);
  }
}

}  // namespace lumen::kv_transfer
