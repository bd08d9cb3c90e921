#include "tokenizer/vocab.h"

#include <algorithm>
#include <cstring>

#include "tokenizer/control_token_detection.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

using gguf::ValueType;

VocabKind parse_kind(const std::string& name) {
  if (name == "no_vocab" || name == "none") return VocabKind::None;
  if (name == "llama") return VocabKind::SentencePiece;
  if (name == "gpt2") return VocabKind::BytePairGpt2;
  if (name == "bert") return VocabKind::WordPiece;
  if (name == "t5") return VocabKind::Unigram;
  if (name == "rwkv") return VocabKind::Rwkv;
  fail("unknown tokenizer model '{}' in tokenizer.ggml.model", name);
}

template <typename T>
std::vector<T> numeric_array(const gguf::Array& array) {
  std::vector<T> out(static_cast<size_t>(array.length));
  if (!out.empty()) std::memcpy(out.data(), array.raw.data(), out.size() * sizeof(T));
  return out;
}

void check_length(const char* key, uint64_t length, size_t n_tokens) {
  if (length != n_tokens) {
    fail("{} has {} entries but the vocabulary has {} tokens", key, length, n_tokens);
  }
}

// An id that points outside the vocabulary is dropped with a warning rather than failing the
// whole model: the rest of the file is usable and nothing will index with it.
std::optional<int32_t> special_id(const gguf::Metadata& md, const char* key, Vocab& vocab) {
  auto id = md.find_unsigned(key);
  if (!id) return std::nullopt;
  if (*id >= vocab.size()) {
    vocab.warnings.push_back(
        fmt::format("{} = {} is outside the {}-token vocabulary; ignored", key, *id, vocab.size()));
    return std::nullopt;
  }
  return static_cast<int32_t>(*id);
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// SentencePiece byte tokens must read "<0xHH>": the tokenizer turns them into raw bytes.
void check_byte_tokens(const Vocab& vocab) {
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (vocab.types[id] != TokenType::Byte) continue;
    const std::string& text = vocab.tokens[id];
    bool ok = text.size() == 6 && text.compare(0, 3, "<0x") == 0 && is_hex_digit(text[3]) &&
              is_hex_digit(text[4]) && text[5] == '>';
    if (!ok) fail("byte token {} is '{}', expected the form <0xHH>", id, text);
  }
}

// Pre-tokenizers whose models llama.cpp gives a BOS by default (the Llama 3 family).
bool adds_bos_by_default(const std::string& pre) {
  return pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3";
}

}  // namespace

std::string_view vocab_kind_name(VocabKind kind) {
  switch (kind) {
    case VocabKind::None: return "none";
    case VocabKind::SentencePiece: return "sentencepiece (llama)";
    case VocabKind::BytePairGpt2: return "byte-level BPE (gpt2)";
    case VocabKind::WordPiece: return "wordpiece (bert)";
    case VocabKind::Unigram: return "unigram (t5)";
    case VocabKind::Rwkv: return "rwkv";
  }
  return "unknown";
}

bool has_vocab(const gguf::Metadata& metadata) {
  return metadata.contains("tokenizer.ggml.model");
}

Vocab load_vocab(const gguf::Metadata& md) {
  Vocab vocab;
  vocab.model_name = md.get_string("tokenizer.ggml.model");
  vocab.kind = parse_kind(vocab.model_name);
  vocab.pre_tokenizer = md.find_string("tokenizer.ggml.pre").value_or("");
  if (vocab.kind == VocabKind::None) return vocab;

  const gguf::Array& tokens = md.get_array("tokenizer.ggml.tokens", ValueType::STRING);
  if (tokens.length == 0) fail("tokenizer.ggml.tokens is empty");
  if (tokens.length > INT32_MAX) fail("tokenizer.ggml.tokens has too many tokens");
  vocab.tokens = tokens.strings;

  if (const auto* scores = md.find_array("tokenizer.ggml.scores", ValueType::F32)) {
    check_length("tokenizer.ggml.scores", scores->length, vocab.size());
    vocab.scores = numeric_array<float>(*scores);
  }

  vocab.types.assign(vocab.size(), TokenType::Normal);
  if (const auto* types = md.find_array("tokenizer.ggml.token_type", ValueType::I32)) {
    check_length("tokenizer.ggml.token_type", types->length, vocab.size());
    auto raw = numeric_array<int32_t>(*types);
    for (size_t id = 0; id < raw.size(); ++id) {
      if (raw[id] < 0 || raw[id] > static_cast<int32_t>(TokenType::Byte)) {
        fail("tokenizer.ggml.token_type of token {} is {}, not a known type (0-6)", id, raw[id]);
      }
      vocab.types[id] = static_cast<TokenType>(raw[id]);
    }
  }
  if (vocab.kind == VocabKind::SentencePiece) check_byte_tokens(vocab);

  if (const auto* merges = md.find_array("tokenizer.ggml.merges", ValueType::STRING)) {
    for (const std::string& merge : merges->strings) {
      size_t space = merge.find(' ', 1);
      if (space == std::string::npos || space + 1 >= merge.size()) {
        fail("tokenizer.ggml.merges entry '{}' is not two tokens separated by a space", merge);
      }
    }
    vocab.merges = merges->strings;
  }

  SpecialTokens& s = vocab.special;
  s.bos = special_id(md, "tokenizer.ggml.bos_token_id", vocab);
  s.eos = special_id(md, "tokenizer.ggml.eos_token_id", vocab);
  s.eot = special_id(md, "tokenizer.ggml.eot_token_id", vocab);
  s.unknown = special_id(md, "tokenizer.ggml.unknown_token_id", vocab);
  s.separator = special_id(md, "tokenizer.ggml.seperator_token_id", vocab);  // sic: the key's spelling
  s.padding = special_id(md, "tokenizer.ggml.padding_token_id", vocab);
  s.mask = special_id(md, "tokenizer.ggml.mask_token_id", vocab);
  bool bos_by_default = s.bos.has_value() && (vocab.kind == VocabKind::SentencePiece ||
                                                adds_bos_by_default(vocab.pre_tokenizer));
  s.add_bos = md.find_bool("tokenizer.ggml.add_bos_token").value_or(bos_by_default);
  s.add_eos = md.find_bool("tokenizer.ggml.add_eos_token").value_or(false);
  if (vocab.kind == VocabKind::WordPiece) {
    // The WordPiece tokenizer lowercases and strips accents (an uncased BERT's normaliser); a
    // cased model's text would come out as other tokens than it was trained on.
    if (!md.find_bool("tokenizer.ggml.normalizer.lowercase").value_or(true)) {
      fail("this WordPiece vocabulary is cased (tokenizer.ggml.normalizer.lowercase is false); Lumen reads uncased "
           "BERT vocabularies only");
    }
    // BERT's converters write [CLS] as the classifier token, not as a BOS; it opens every input.
    if (!s.bos) s.bos = special_id(md, "tokenizer.ggml.cls_token_id", vocab);
    s.add_bos = md.find_bool("tokenizer.ggml.add_bos_token").value_or(s.bos.has_value());
  }
  s.add_sep = md.find_bool("tokenizer.ggml.add_sep_token")
                  .value_or(vocab.kind == VocabKind::WordPiece && s.separator.has_value());
  if (s.add_sep && !s.separator) fail("tokenizer.ggml.add_sep_token is set but the vocabulary has no separator token");
  vocab.add_space_prefix = md.find_bool("tokenizer.ggml.add_space_prefix")
                               .value_or(vocab.kind == VocabKind::SentencePiece);
  detect_control_tokens(vocab);
  return vocab;
}

bool Vocab::ends_generation(int32_t id) const {
  return std::binary_search(end_of_generation.begin(), end_of_generation.end(), id);
}

}  // namespace lumen::tokenizer
