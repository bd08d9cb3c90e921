#include "tokenizer/unicode_regex.h"

#include <cstdint>
#include <new>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace lumen::tokenizer {

namespace {

// Oniguruma's Unicode whitespace: TAB..CR, NEXT LINE and the separators (Zs, Zl, Zp).
constexpr std::string_view kWhitespaceClassBody = "\\t-\\r\\x{85}\\p{Z}";

std::string pcre2_message(int code) {
  PCRE2_UCHAR buffer[256];
  int n = pcre2_get_error_message(code, buffer, sizeof(buffer));
  if (n < 0) return fmt::format("PCRE2 error {}", code);
  return std::string(reinterpret_cast<const char*>(buffer), static_cast<size_t>(n));
}

}  // namespace

struct UnicodeRegex::Compiled {
  pcre2_code* code = nullptr;
  ~Compiled() {
    if (code != nullptr) pcre2_code_free(code);
  }
};

UnicodeRegex::UnicodeRegex(const std::string& pattern)
    : pattern_(pattern), compiled_(std::make_unique<Compiled>()) {
  int error = 0;
  PCRE2_SIZE offset = 0;
  compiled_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                  PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
  if (compiled_->code == nullptr) {
    fail("pre-tokenizer pattern '{}' does not compile at offset {}: {}", pattern, offset,
         pcre2_message(error));
  }
  // Without JIT support pcre2_match interprets the pattern: slower, same results.
  pcre2_jit_compile(compiled_->code, PCRE2_JIT_COMPLETE);
}

UnicodeRegex::~UnicodeRegex() = default;
UnicodeRegex::UnicodeRegex(UnicodeRegex&&) noexcept = default;
UnicodeRegex& UnicodeRegex::operator=(UnicodeRegex&&) noexcept = default;

// Match data, and a large JIT stack made only when a search overflows the default one (32 KiB
// of machine stack is plenty for most text, not for some very long runs).
struct UnicodeRegex::Matcher::State {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  ~State() {
    if (data != nullptr) pcre2_match_data_free(data);
    if (context != nullptr) pcre2_match_context_free(context);
    if (stack != nullptr) pcre2_jit_stack_free(stack);
  }
  void use_large_stack() {
    stack = pcre2_jit_stack_create(64 * 1024, 16 * 1024 * 1024, nullptr);
    if (stack == nullptr) throw std::bad_alloc();
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
};

UnicodeRegex::Matcher::Matcher(const UnicodeRegex& regex)
    : regex_(&regex), state_(std::make_unique<State>()) {
  state_->data = pcre2_match_data_create_from_pattern(regex.compiled_->code, nullptr);
  state_->context = pcre2_match_context_create(nullptr);
  if (state_->data == nullptr || state_->context == nullptr) throw std::bad_alloc();
  // The default limit (10 million backtracking steps) stops a search over a single run of ten
  // million spaces, which is legitimate input. The pre-tokenizer patterns backtrack at most
  // once over a run (\s*[\r\n]+, \s+(?!\S)), so their cost stays linear without a limit.
  pcre2_set_match_limit(state_->context, UINT32_MAX);
}

UnicodeRegex::Matcher::~Matcher() = default;

void UnicodeRegex::Matcher::split_isolated(std::string_view text,
                                           std::vector<std::string_view>& out) {
  if (text.empty()) return;
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t piece_start = 0;  // start of the text not yet handed out
  size_t search_from = 0;
  while (search_from < text.size()) {
    // The text was checked (or repaired) as UTF-8 before it got here.
    int rc = pcre2_match(regex_->compiled_->code, subject, text.size(), search_from,
                         PCRE2_NO_UTF_CHECK, state_->data, state_->context);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT && state_->stack == nullptr) {
      state_->use_large_stack();
      continue;
    }
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("pre-tokenizer pattern failed on the input: {}", pcre2_message(rc));
    const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(state_->data);
    size_t begin = ovector[0];
    size_t end = ovector[1];
    if (end == begin) {
      // An empty match yields no piece; step over one code point so the search moves on.
      size_t step = valid_sequence_length(text, begin);
      search_from = begin + (step == 0 ? 1 : step);
      continue;
    }
    if (begin > piece_start) out.push_back(text.substr(piece_start, begin - piece_start));
    out.push_back(text.substr(begin, end - begin));
    piece_start = end;
    search_from = end;
  }
  if (piece_start < text.size()) out.push_back(text.substr(piece_start));
}

void UnicodeRegex::split_isolated(std::string_view text, std::vector<std::string_view>& out) const {
  Matcher matcher(*this);
  matcher.split_isolated(text, out);
}

std::string oniguruma_whitespace_to_pcre2(std::string_view pattern) {
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    char c = pattern[i];
    if (c == '\\' && i + 1 < pattern.size()) {
      char next = pattern[++i];
      if (next == 's' || next == 'S') {
        bool negated = next == 'S';
        if (in_class && negated) fail("pattern '{}': \\S inside [...] is not supported", pattern);
        if (in_class) {
          out += kWhitespaceClassBody;
        } else {
          out += negated ? "[^" : "[";
          out += kWhitespaceClassBody;
          out += ']';
        }
      } else {
        out += c;
        out += next;
      }
      continue;
    }
    if (c == '[' && !in_class) in_class = true;
    else if (c == ']' && in_class) in_class = false;
    out += c;
  }
  return out;
}

}  // namespace lumen::tokenizer
