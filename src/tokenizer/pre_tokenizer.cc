#include "tokenizer/pre_tokenizer.h"

#include <array>

#include "util/error.h"

namespace lumen::tokenizer {

namespace {

// Patterns as Hugging Face's tokenizer.json files write them (Oniguruma dialect; \s is
// rewritten for PCRE2 when compiled). PCRE2 reads (?i:...), \p{..} and (?!..) as Oniguruma does.

// GPT-2's ByteLevel(use_regex=true) pattern.
constexpr std::string_view kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3's Split pattern: case-insensitive contractions, a letter run with one leading
// non-letter, digits in groups of up to three, punctuation runs that keep their newlines.
constexpr std::string_view kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen 2's Split pattern: Llama 3's with single digits.
constexpr std::string_view kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// GPT-4o's o200k Split pattern (gpt-oss, Llama 4): a word is an optional leading non-letter,
// upper-case letters (and marks) then lower-case ones or the reverse, with an optional
// case-insensitive contraction; digits in groups of up to three; punctuation runs that keep
// their newlines and slashes. llama.cpp runs a rewrite of it without the letter classes, which
// differs on some text; this is tokenizer.json's own, as Hugging Face runs it.
constexpr std::string_view kGpt4o =
    R"([^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Digits(individual_digits=true): every numeric code point on its own.
constexpr std::string_view kSingleDigits = R"(\p{N})";

// llama.cpp's fallback for BPE vocabularies that name no pre-tokenizer (no Hugging Face
// counterpart exists; this is what llama.cpp runs, so models converted without the key behave
// as they do there).
constexpr std::array<std::string_view, 4> kDefault = {
    R"([\p{P}\$\+<=>\^~\|]+)",
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))",
    R"(\p{N}+)",
    R"([0-9][0-9][0-9])",
};

struct NamedSpec {
  std::string_view gguf_name;
  std::string_view canonical;
  bool nfc = false;  // the model's tokenizer.json normalizes to NFC
};

// GGUF names that llama.cpp treats exactly like one of the canonical ones.
constexpr std::array<NamedSpec, 14> kNames = {{
    {"gpt-2", "gpt-2"},
    {"llama-bpe", "llama-bpe"},
    {"llama3", "llama-bpe"},
    {"llama-v3", "llama-bpe"},
    {"qwen2", "qwen2", true},  // Qwen 2, 2.5 and 3: "normalizer": {"type": "NFC"}
    // DeepSeek-R1's Qwen distills: no NFC, as in llama.cpp (not checked against their file).
    {"deepseek-r1-qwen", "qwen2"},
    {"gpt-4o", "gpt-4o"},  // gpt-oss
    {"llama4", "gpt-4o"},
    {"starcoder", "starcoder"},
    {"smollm", "starcoder"},  // SmolLM2: Digits(individual) then GPT-2's ByteLevel regex
    {"refact", "starcoder"},
    {"codeshell", "starcoder"},
    {"default", "default"},
    {"", "default"},
}};

PreTokenizerSpec canonical_spec(std::string_view canonical) {
  PreTokenizerSpec spec;
  spec.name = std::string(canonical);
  if (canonical == "gpt-2") {
    spec.patterns = {std::string(kGpt2)};
  } else if (canonical == "llama-bpe") {
    spec.patterns = {std::string(kLlama3)};
    spec.ignore_merges = true;
  } else if (canonical == "qwen2") {
    spec.patterns = {std::string(kQwen2)};
  } else if (canonical == "gpt-4o") {
    spec.patterns = {std::string(kGpt4o)};
  } else if (canonical == "starcoder") {
    spec.patterns = {std::string(kSingleDigits), std::string(kGpt2)};
  } else {
    for (std::string_view p : kDefault) spec.patterns.emplace_back(p);
  }
  return spec;
}

}  // namespace

std::vector<std::string_view> known_pre_tokenizers() {
  std::vector<std::string_view> names;
  for (const NamedSpec& named : kNames) {
    if (!named.gguf_name.empty()) names.push_back(named.gguf_name);
  }
  return names;
}

PreTokenizerSpec pre_tokenizer_spec(std::string_view gguf_name) {
  for (const NamedSpec& named : kNames) {
    if (named.gguf_name == gguf_name) {
      PreTokenizerSpec spec = canonical_spec(named.canonical);
      spec.nfc = named.nfc;
      return spec;
    }
  }
  std::string known;
  for (std::string_view name : known_pre_tokenizers()) {
    known += known.empty() ? "" : ", ";
    known += name;
  }
  fail("pre-tokenizer '{}' (tokenizer.ggml.pre) is not supported; Lumen knows: {}", gguf_name,
       known);
}

PreTokenizer::PreTokenizer(const PreTokenizerSpec& spec) : spec_(spec) {
  for (const std::string& pattern : spec_.patterns) {
    regexes_.emplace_back(oniguruma_whitespace_to_pcre2(pattern));
  }
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  words.clear();
  if (text.empty()) return;
  words.push_back(text);
  std::vector<std::string_view> next;
  for (const UnicodeRegex& regex : regexes_) {
    UnicodeRegex::Matcher matcher(regex);
    next.clear();
    for (std::string_view piece : words) matcher.split_isolated(piece, next);
    words.swap(next);
  }
}

}  // namespace lumen::tokenizer
