#include "cli/mpi_launch.h"

#include <fmt/format.h>

#include <cstdlib>
#include <optional>
#include <string_view>

namespace lumen::cli {

namespace {

std::optional<long> number(std::string_view text) {
  if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string_view::npos) {
    return std::nullopt;
  }
  return std::strtol(std::string(text).c_str(), nullptr, 10);
}

std::optional<long> environment_number(const char* name) {
  const char* value = std::getenv(name);
  return value == nullptr ? std::nullopt : number(value);
}

}  // namespace

LaunchRank launch_rank_from_environment() {
  for (const auto& [rank_name, size_name] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"}, std::pair{"PMI_RANK", "PMI_SIZE"}}) {
    const auto rank = environment_number(rank_name);
    const auto size = environment_number(size_name);
    if (rank && size && *size >= 1 && *rank < *size) return {static_cast<int>(*rank), static_cast<int>(*size)};
  }
  return {};
}

long parallel_processes_asked(const std::vector<std::string>& args) {
  long tensor = 1, pipeline = 1, expert = 1, context = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string_view arg = args[i];
    for (const auto& [flag, slot] : {std::pair{"--tensor-parallel-size", &tensor}, std::pair{"--tp", &tensor},
                                     std::pair{"--pipeline-parallel-size", &pipeline}, std::pair{"--pp", &pipeline},
                                     std::pair{"--expert-parallel-size", &expert}, std::pair{"--ep", &expert},
                                     std::pair{"--context-parallel-size", &context}, std::pair{"--cp", &context}}) {
      const std::string_view name = flag;
      std::optional<long> value;
      if (arg == name && i + 1 < args.size()) {
        value = number(args[i + 1]);
      } else if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
        value = number(arg.substr(name.size() + 1));
      }
      if (value) *slot = *value;
    }
  }
  return tensor * pipeline * expert * context;
}

std::string unspread_launch_warning(const LaunchRank& launch, const std::vector<std::string>& args) {
  if (launch.rank != 0 || launch.size < 2 || parallel_processes_asked(args) > 1) return {};
  return fmt::format(
      "lumen: warning: started as {} processes (mpirun -np {}) without --tensor-parallel-size, "
      "--pipeline-parallel-size, --expert-parallel-size or --context-parallel-size: each process runs the whole "
      "command on its own. To spread the model over them, add --tensor-parallel-size {} (or --pipeline-parallel-size "
      "{}, for a mixture of experts --expert-parallel-size {}, or --context-parallel-size {} to share long prompts' "
      "prefill); otherwise run lumen without mpirun.\n",
      launch.size, launch.size, launch.size, launch.size, launch.size, launch.size);
}

}  // namespace lumen::cli
