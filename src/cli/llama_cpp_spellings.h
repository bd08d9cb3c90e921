#pragma once
// llama.cpp's multi-letter single-dash flags that Lumen takes as well: CLI11 would read "-ngl"
// as the short flags -n, -g and -l, so the command line is respelled before it is parsed.
#include <string>
#include <vector>

namespace lumen::cli {

// argv[1..] with "-ngl" (and "-ngl=N") as "--n-gpu-layers".
inline std::vector<std::string> with_llama_cpp_spellings(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (size_t i = 1; i < args.size(); ++i) {
    if (args[i] == "-ngl") args[i] = "--n-gpu-layers";
    if (args[i].starts_with("-ngl=")) args[i] = "--n-gpu-layers=" + args[i].substr(5);
  }
  return args;
}

}  // namespace lumen::cli
