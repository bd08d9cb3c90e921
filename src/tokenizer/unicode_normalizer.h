#pragma once
// Unicode normalization Form C (canonical decomposition, then canonical composition), as Hugging
// Face tokenizers' NFC normalizer applies it: Qwen 2's tokenizer.json has one, so "e" + U+0301
// tokenizes as "é" (U+00E9) there. llama.cpp does not normalize. The character data is
// utf8proc's; the canonical reordering is done here so that a long run of combining marks costs
// linear time (utf8proc_decompose sorts them by swapping neighbours, quadratic in the run).
#include <string>
#include <string_view>

namespace lumen::tokenizer {

// True when `text` is certainly in NFC already: every code point is below U+0300 (all of
// them are starters that nothing composes with), i.e. no byte is 0xCC or above. One pass, no
// character lookups; most text (ASCII, Latin-1, ...) takes only this.
bool is_nfc_quick(std::string_view text);

// The NFC form of valid UTF-8 `text` (callers repair invalid UTF-8 first, as the tokenizer
// does). Linear in the length: only the stretches between code points below U+0300 that hold
// anything else are decomposed, reordered and recomposed.
std::string to_nfc(std::string_view text);

}  // namespace lumen::tokenizer
