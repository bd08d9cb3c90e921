// `lumen tokenize` and `lumen detokenize`: the model's tokenizer on stdin, for checking it
// against other tools and for scripts. tokenize reads stdin byte for byte (a trailing newline
// is text too) and detokenize writes the text without adding one, so
// `lumen tokenize | lumen detokenize` gives the input back.
#include <fmt/format.h>

#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "cli/commands.h"
#include "cli/default_model.h"
#include "gguf/file.h"
#include "tokenizer/tokenizer.h"
#include "util/error.h"

namespace lumen::cli {

namespace {

struct TokenizeOptions {
  std::string model;
  std::optional<std::string> prompt;  // -p: the text; absent: standard input
  bool parse_special = false;
  bool add_special = false;
  bool ids = false;
  bool pieces = false;
};

std::string read_stdin() {
  std::string text;
  char buffer[1 << 16];
  size_t n = 0;
  while ((n = std::fread(buffer, 1, sizeof(buffer), stdin)) > 0) text.append(buffer, n);
  if (std::ferror(stdin)) fail("cannot read standard input");
  return text;
}

tokenizer::Tokenizer load_tokenizer(const std::string& given) {
  gguf::GgufFile file = gguf::GgufFile::open(resolve_model_path(given));
  return tokenizer::Tokenizer::from_gguf(file);
}

// The length of the UTF-8 character starting at text[at] when it is whole and well-formed
// there, else 0.
size_t utf8_character_at(const std::string& text, size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const size_t length = lead < 0x80 ? 1 : lead >= 0xC2 && lead <= 0xDF ? 2 : lead >= 0xE0 && lead <= 0xEF ? 3
                        : lead >= 0xF0 && lead <= 0xF4                  ? 4
                                                                        : 0;
  if (length == 0 || at + length > text.size()) return 0;
  for (size_t k = 1; k < length; ++k)
    if ((static_cast<unsigned char>(text[at + k]) & 0xC0) != 0x80) return 0;
  // No overlong forms, surrogates or code points past U+10FFFF.
  const auto second = length > 1 ? static_cast<unsigned char>(text[at + 1]) : 0;
  if ((lead == 0xE0 && second < 0xA0) || (lead == 0xED && second > 0x9F) || (lead == 0xF0 && second < 0x90) ||
      (lead == 0xF4 && second > 0x8F))
    return 0;
  return length;
}

// A token's text (its bytes, not the vocabulary's byte-level spelling "Ġw"), quoted, so that
// spaces are visible: a quote, backslash or control character, and each byte that is not part
// of a whole UTF-8 character (a token may end inside one), written as an escape.
std::string quoted_piece(const std::string& bytes) {
  std::string out = "'";
  for (size_t at = 0; at < bytes.size();) {
    const char c = bytes[at];
    const auto byte = static_cast<unsigned char>(c);
    const size_t length = utf8_character_at(bytes, at);
    if (c == '\\' || c == '\'') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (length == 0 || byte < 0x20 || byte == 0x7F) {
      out += fmt::format("\\x{:02x}", byte);
    } else {
      out.append(bytes, at, length);
      at += length;
      continue;
    }
    ++at;
  }
  return out + "'";
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  size_t pos = 0;
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == ','; };
  while (pos < text.size()) {
    while (pos < text.size() && is_space(text[pos])) ++pos;
    size_t end = pos;
    while (end < text.size() && !is_space(text[end])) ++end;
    if (end == pos) break;
    std::string_view word(text.data() + pos, end - pos);
    int64_t value = 0;
    auto [ptr, ec] = std::from_chars(word.data(), word.data() + word.size(), value);
    bool whole_number = ptr == word.data() + word.size() &&
                        (ec == std::errc() || ec == std::errc::result_out_of_range);
    if (!whole_number) fail("'{}' is not a token id", word.substr(0, 40));
    if (ec != std::errc() || value < INT32_MIN || value > INT32_MAX) {
      fail("token id {} is outside the vocabulary", word.substr(0, 40));
    }
    ids.push_back(static_cast<int32_t>(value));
    pos = end;
  }
  return ids;
}

void run_tokenize(const TokenizeOptions& options) {
  tokenizer::Tokenizer tok = load_tokenizer(options.model);
  std::string text = options.prompt ? *options.prompt : read_stdin();
  std::vector<int32_t> ids =
      tok.encode(text, {.add_special = options.add_special, .parse_special = options.parse_special});
  std::string line;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) line += ' ';
    if (options.pieces) {
      line += quoted_piece(tok.token_bytes(ids[i]));
    } else {
      line += std::to_string(ids[i]);
    }
  }
  line += '\n';
  std::fwrite(line.data(), 1, line.size(), stdout);
}

void run_detokenize(const std::string& model) {
  tokenizer::Tokenizer tok = load_tokenizer(model);
  std::vector<int32_t> ids = parse_ids(read_stdin());
  // The dummy-prefix space of SentencePiece vocabularies is taken back, as Hugging Face's
  // decode does; control tokens are written as their text.
  std::string text = tok.decode(ids, {.skip_special = false, .strip_leading_space = true});
  // The exact bytes into a pipe; on a terminal, a final newline so the shell prompt starts a line.
  if (isatty(STDOUT_FILENO) != 0 && (text.empty() || text.back() != '\n')) text += '\n';
  std::fwrite(text.data(), 1, text.size(), stdout);
}

}  // namespace

void add_tokenize_commands(CLI::App& app) {
  auto options = std::make_shared<TokenizeOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tokenize",
      "Print the token ids (or pieces) of the text given with -p, or else of standard input (its exact "
      "bytes: a final newline is tokenized too)");
  cmd->add_option("-m,--model", options->model, "GGUF file (default: the default model)");
  cmd->add_option("-p,--prompt", options->prompt, "The text to tokenize (instead of standard input)");
  cmd->add_flag("--parse-special", options->parse_special,
                "Read text such as <|im_start|> as the control token");
  cmd->add_flag("--add-special", options->add_special,
                "Add BOS/EOS as the model's tokenizer.ggml.add_*_token flags say");
  auto* ids = cmd->add_flag("--ids", options->ids, "Print token ids (the default)");
  auto* pieces = cmd->add_flag("--pieces", options->pieces,
                               "Print each token's text in quotes ('Hello' ' world'; bytes that are not a whole UTF-8 "
                               "character as \\xNN)");
  ids->excludes(pieces);
  cmd->callback([options] { run_tokenize(*options); });

  auto model = std::make_shared<std::string>();
  CLI::App* detok = app.add_subcommand(
      "detokenize",
      "Print the text of the whitespace-separated token ids on standard input (exact bytes; a newline "
      "is added only on a terminal)");
  detok->add_option("-m,--model", *model, "GGUF file (default: the default model)");
  detok->callback([model] { run_detokenize(*model); });
}

}  // namespace lumen::cli
