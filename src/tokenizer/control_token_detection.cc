#include "tokenizer/control_token_detection.h"

#include <algorithm>
#include <array>
#include <optional>
#include <string_view>

#include <fmt/format.h>

namespace lumen::tokenizer {

namespace {

// Texts of end-of-turn, fill-in-the-middle and end-of-generation tokens across model families.
// Each group is one role: only the first token found for a role is taken (ids ascending).
constexpr std::array<std::string_view, 11> kEndOfTurn = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>",
    "<EOT>", "_<EOT>", "[EOT]", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
    "<end_of_utterance>"};
constexpr std::array<std::string_view, 1> kEndOfMessage = {"<|eom_id|>"};
constexpr std::array<std::string_view, 8> kFimPrefix = {
    "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>",
    "<PRE>", "\xe2\x96\x81<PRE>", "<|code_prefix|>", "<|prefix|>"};
constexpr std::array<std::string_view, 8> kFimSuffix = {
    "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>",
    "<SUF>", "\xe2\x96\x81<SUF>", "<|code_suffix|>", "<|suffix|>"};
constexpr std::array<std::string_view, 8> kFimMiddle = {
    "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
    "<MID>", "\xe2\x96\x81<MID>", "<|code_middle|>", "<|middle|>"};
constexpr std::array<std::string_view, 5> kFimPad = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>",
                                                     "<PAD>", "[PAD]"};
constexpr std::array<std::string_view, 5> kFimRepo = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                                      "<REPO>", "<reponame>"};
constexpr std::array<std::string_view, 1> kFimSeparator = {"<|file_sep|>"};

// Every token with one of these texts ends generation.
constexpr std::array<std::string_view, 20> kEndOfGeneration = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>",
    "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>", "[e~["};

template <size_t N>
bool is_one_of(std::string_view text, const std::array<std::string_view, N>& texts) {
  return std::find(texts.begin(), texts.end(), text) != texts.end();
}

template <size_t N>
std::optional<int32_t> first_with_text(const Vocab& vocab, const std::array<std::string_view, N>& texts) {
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (is_one_of(vocab.tokens[id], texts)) return static_cast<int32_t>(id);
  }
  return std::nullopt;
}

// gpt-oss's harmony format (the o200k_harmony vocabulary, which has both <|return|> and
// <|call|>): <|end|> closes one message of a reply (its reasoning, say), not the reply, which
// goes on to its final message and ends at <|return|> or <|call|>. llama.cpp drops <|end|> from
// its end-of-generation tokens the same way. It stays a control token: a client's text that
// spells it is text.

bool is_harmony_vocabulary(const Vocab& vocab) {
  bool has_return = false, has_call = false;
  for (const std::string& text : vocab.tokens) {
    has_return = has_return || text == "<|return|>";
    has_call = has_call || text == "<|call|>";
  }
  return has_return && has_call;
}

void make_control(Vocab& vocab, int32_t id) {
  TokenType& type = vocab.types[static_cast<size_t>(id)];
  if (type == TokenType::Control) return;
  vocab.warnings.push_back(fmt::format("token {} '{}' is treated as a control token",
                                       id, vocab.tokens[static_cast<size_t>(id)]));
  type = TokenType::Control;
}

}  // namespace

void detect_control_tokens(Vocab& vocab) {
  std::vector<int32_t> end_of_generation;
  auto role = [&](std::optional<int32_t> id, bool ends_generation) {
    if (!id) return;
    make_control(vocab, *id);
    if (ends_generation) end_of_generation.push_back(*id);
  };
  auto eot = first_with_text(vocab, kEndOfTurn);
  auto eom = first_with_text(vocab, kEndOfMessage);
  role(eot, false);
  role(eom, false);
  role(first_with_text(vocab, kFimPrefix), false);
  role(first_with_text(vocab, kFimSuffix), false);
  role(first_with_text(vocab, kFimMiddle), false);
  role(first_with_text(vocab, kFimPad), true);
  role(first_with_text(vocab, kFimRepo), true);
  role(first_with_text(vocab, kFimSeparator), true);
  for (size_t id = 0; id < vocab.size(); ++id) {
    if (is_one_of(vocab.tokens[id], kEndOfGeneration)) role(static_cast<int32_t>(id), true);
  }
  // The declared end tokens always end generation, whatever their text.
  for (auto id : {vocab.special.eos, vocab.special.eot, eot, eom}) {
    if (id) end_of_generation.push_back(*id);
  }
  if (!vocab.special.eot && eot) vocab.special.eot = eot;
  if (is_harmony_vocabulary(vocab)) {
    for (size_t id = 0; id < vocab.size(); ++id) {
      if (vocab.tokens[id] != "<|end|>" || vocab.special.eos == static_cast<int32_t>(id)) continue;
      std::erase(end_of_generation, static_cast<int32_t>(id));
      if (vocab.special.eot == static_cast<int32_t>(id)) vocab.special.eot.reset();
    }
  }
  std::sort(end_of_generation.begin(), end_of_generation.end());
  end_of_generation.erase(std::unique(end_of_generation.begin(), end_of_generation.end()),
                          end_of_generation.end());
  vocab.end_of_generation = std::move(end_of_generation);
}

}  // namespace lumen::tokenizer
