#pragma once
// The sampling checks (SamplingParams::validate) name the API's fields, which is right for the
// server and wrong on the command line: `lumen run --temp -1` said "temperature must be ...".
// These rewrite such a message with the flag the user typed.
#include <string>

#include "util/error.h"

namespace lumen::cli {

// `message` with its leading API field name (temperature, top_p, max_tokens, n...) replaced by
// the command-line flag that sets it (--temp, --top-p, -n, --completions...); unchanged when it
// starts with no such name.
std::string with_flag_names(const std::string& message);

// Runs `check` (a validate() call); a lumen::Error it throws is thrown again with flag names.
template <typename Check>
void check_with_flag_names(Check&& check) {
  try {
    check();
  } catch (const Error& e) {
    throw Error(with_flag_names(e.what()));
  }
}

}  // namespace lumen::cli
