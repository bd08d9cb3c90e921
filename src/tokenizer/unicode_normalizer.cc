#include "tokenizer/unicode_normalizer.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

// Code points below U+0300 are starters (combining class 0) with NFC_Quick_Check=Yes: they
// compose with nothing before them and nothing composes across them, so normalization can stop
// and start again before each (UAX #15, section 9). Their UTF-8 lead bytes are all below 0xCC,
// and every byte from 0xCC up is the lead byte of a code point from U+0300 on.
constexpr unsigned char kFirstLeadToNormalize = 0xCC;

bool starts_code_point_to_normalize(char c) { return static_cast<unsigned char>(c) >= kFirstLeadToNormalize; }

bool is_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

uint8_t combining_class(utf8proc_int32_t cp) {
  return static_cast<uint8_t>(utf8proc_get_property(cp)->combining_class);  // 0 to 254
}

// A run of non-starters this long or shorter is sorted by insertion (the usual run is one or
// two marks); a longer one by counting sort, so a hostile run of many marks stays linear.
constexpr size_t kInsertionSortMax = 32;

void sort_by_combining_class(utf8proc_int32_t* run, size_t n, std::vector<utf8proc_int32_t>& scratch) {
  if (n <= kInsertionSortMax) {
    for (size_t j = 1; j < n; ++j) {
      const utf8proc_int32_t cp = run[j];
      const uint8_t ccc = combining_class(cp);
      size_t k = j;
      for (; k > 0 && combining_class(run[k - 1]) > ccc; --k) run[k] = run[k - 1];
      run[k] = cp;
    }
    return;
  }
  std::array<size_t, 257> next{};  // next[c]: where the next mark of class c goes
  for (size_t j = 0; j < n; ++j) ++next[combining_class(run[j]) + 1u];
  for (size_t c = 1; c < next.size(); ++c) next[c] += next[c - 1];
  scratch.resize(n);
  for (size_t j = 0; j < n; ++j) scratch[next[combining_class(run[j])]++] = run[j];
  std::copy_n(scratch.begin(), n, run);
}

// Canonical ordering (Unicode section 3.11): every run of non-starters stably sorted by
// combining class.
void canonical_order(std::vector<utf8proc_int32_t>& cps, std::vector<utf8proc_int32_t>& scratch) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t end = i + 1;
    while (end < cps.size() && combining_class(cps[end]) != 0) ++end;
    sort_by_combining_class(cps.data() + i, end - i, scratch);
    i = end;
  }
}

struct Buffers {
  std::vector<utf8proc_int32_t> cps;
  std::vector<utf8proc_int32_t> scratch;
};

// Appends the NFC form of `span`, which starts and ends at places where normalization may.
void append_nfc(std::string_view span, Buffers& buffers, std::string& out) {
  // No canonical decomposition is longer than 4 code points; 8 leaves room, and a longer one
  // (a future table) is still handled below.
  constexpr utf8proc_ssize_t kRoom = 8;
  std::vector<utf8proc_int32_t>& cps = buffers.cps;
  cps.clear();
  int boundclass = UTF8PROC_BOUNDCLASS_START;  // unused without UTF8PROC_CHARBOUND
  size_t pos = 0;
  while (pos < span.size()) {
    const auto cp = static_cast<utf8proc_int32_t>(next_code_point(span, pos));
    const size_t at = cps.size();
    cps.resize(at + kRoom);
    utf8proc_ssize_t n = utf8proc_decompose_char(cp, cps.data() + at, kRoom, UTF8PROC_DECOMPOSE, &boundclass);
    if (n > kRoom) {
      cps.resize(at + static_cast<size_t>(n));
      n = utf8proc_decompose_char(cp, cps.data() + at, n, UTF8PROC_DECOMPOSE, &boundclass);
    }
    if (n < 0) fail("NFC normalization failed at U+{:04X}: {}", static_cast<uint32_t>(cp), utf8proc_errmsg(n));
    cps.resize(at + static_cast<size_t>(n));
  }
  canonical_order(cps, buffers.scratch);
  // Composition only: the text is decomposed and ordered, and utf8proc's composition is one
  // pass. UTF8PROC_STABLE leaves the composition exclusions decomposed, as NFC requires.
  const utf8proc_ssize_t length =
      utf8proc_normalize_utf32(cps.data(), static_cast<utf8proc_ssize_t>(cps.size()),
                               static_cast<utf8proc_option_t>(UTF8PROC_COMPOSE | UTF8PROC_STABLE));
  if (length < 0) fail("NFC normalization failed: {}", utf8proc_errmsg(length));
  for (utf8proc_ssize_t i = 0; i < length; ++i) append_utf8(out, static_cast<char32_t>(cps[static_cast<size_t>(i)]));
}

}  // namespace

bool is_nfc_quick(std::string_view text) {
  return std::none_of(text.begin(), text.end(), starts_code_point_to_normalize);
}

std::string to_nfc(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  Buffers buffers;
  size_t done = 0;  // text[0, done) is in `out`
  while (true) {
    const auto hot =
        std::find_if(text.begin() + static_cast<std::ptrdiff_t>(done), text.end(), starts_code_point_to_normalize);
    if (hot == text.end()) break;
    // Everything in [done, hot) is below U+0300. The span to normalize starts one code point
    // back, which the code point at `hot` may compose with ("e" + U+0301)...
    size_t start = static_cast<size_t>(hot - text.begin());
    if (start > done) {
      --start;
      while (start > done && is_continuation(text[start])) --start;
    }
    // ... and ends before the next code point below U+0300.
    size_t end = static_cast<size_t>(hot - text.begin());
    while (end < text.size() && (starts_code_point_to_normalize(text[end]) || is_continuation(text[end]))) ++end;
    out.append(text.substr(done, start - done));
    append_nfc(text.substr(start, end - start), buffers, out);
    done = end;
  }
  out.append(text.substr(done));
  return out;
}

}  // namespace lumen::tokenizer
