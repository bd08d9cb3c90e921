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

// A piece as the vocabulary spells it, with the bytes that would make the line ambiguous
// (space, control characters, backslash) written as escapes.
std::string escaped_piece(const std::string& text) {
  std::string out;
  for (char c : text) {
    auto byte = static_cast<unsigned char>(c);
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\t') out += "\\t";
    else if (c == '\r') out += "\\r";
    else if (byte <= 0x20 || byte == 0x7F) out += fmt::format("\\x{:02x}", byte);
    else out += c;
  }
  return out;
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
      line += escaped_piece(tok.vocab().tokens[static_cast<size_t>(ids[i])]);
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
                               "Print the tokens as the vocabulary spells them");
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
