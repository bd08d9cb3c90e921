#include "cli/flag_names.h"

#include <string_view>
#include <utility>

namespace lumen::cli {

std::string with_flag_names(const std::string& message) {
  // The fields `lumen run` and `lumen chat` set from flags (sampling_options.h, cmd_run.cc).
  static constexpr std::pair<std::string_view, std::string_view> kFlags[] = {
      {"temperature", "--temp"},
      {"top_k", "--top-k"},
      {"top_p", "--top-p"},
      {"min_p", "--min-p"},
      {"typical_p", "--typical-p"},
      {"repetition_penalty", "--repeat-penalty"},
      {"frequency_penalty", "--frequency-penalty"},
      {"presence_penalty", "--presence-penalty"},
      {"penalty_last_n", "--repeat-last-n"},
      {"logit_bias", "--logit-bias"},
      {"max_tokens", "-n"},
      {"min_tokens", "--min-tokens"},
      {"best_of", "--best-of"},
      {"n", "--completions"},
      {"length_penalty", "--length-penalty"},
      {"logprobs", "--logprobs"},
      {"prompt_logprobs", "--prompt-logprobs"},
      {"seed", "--seed"},
  };
  for (const auto& [field, flag] : kFlags) {
    // A whole word at the start: "n must be" is --completions, "no ..." is not.
    if (message.size() > field.size() && message.compare(0, field.size(), field) == 0 && message[field.size()] == ' ') {
      return std::string(flag) + message.substr(field.size());
    }
  }
  return message;
}

}  // namespace lumen::cli
