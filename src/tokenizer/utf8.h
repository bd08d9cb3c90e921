#pragma once
// UTF-8 helpers for the tokenizers. Text from users is untrusted: everything here is defined
// for any byte string. Invalid input is repaired the way Rust's String::from_utf8_lossy (what
// Hugging Face tokenizers sees) and Python's errors="replace" do: one U+FFFD per maximal
// subpart of an ill-formed sequence (Unicode 15, section 3.9, "U+FFFD Substitution of Maximal
// Subparts").
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace lumen::tokenizer {

inline constexpr char32_t kReplacementChar = 0xFFFD;
inline constexpr std::string_view kReplacementUtf8 = "\xEF\xBF\xBD";

// Appends the UTF-8 form of `cp`. Surrogates and values past U+10FFFF become U+FFFD.
void append_utf8(std::string& out, char32_t cp);
std::string to_utf8(char32_t cp);

// Length of the well-formed sequence starting at `pos`, or 0 when the bytes there do not start
// one (a stray continuation byte, an overlong form, a surrogate, a truncated sequence).
size_t valid_sequence_length(std::string_view text, size_t pos);

// Length of the maximal subpart at `pos` that an ill-formed sequence there is replaced as
// (at least 1). Only meaningful where valid_sequence_length(text, pos) == 0.
size_t maximal_subpart_length(std::string_view text, size_t pos);

bool is_valid_utf8(std::string_view text);

// `text` with every maximal ill-formed subpart replaced by U+FFFD; valid text comes back as is.
std::string sanitize_utf8(std::string_view text);

// Decodes the code point of a well-formed sequence at `pos` and advances `pos` past it. For an
// ill-formed sequence it returns U+FFFD and advances past the maximal subpart.
char32_t next_code_point(std::string_view text, size_t& pos);

// The longest prefix of `text` that does not end inside a sequence which further bytes could
// still complete. A streaming decoder emits this prefix and keeps the rest for later.
size_t complete_prefix_length(std::string_view text);

}  // namespace lumen::tokenizer
