#pragma once
// `--device`: which backend runs the model, for every command that loads one (ModelOptions::device):
// "cpu" (the default; --threads sets its thread pool) or "cuda" / "cuda:N" (a build with
// -DLUMEN_CUDA=ON).
#include <CLI/CLI.hpp>
#include <string>

namespace lumen::cli {

inline void add_device_option(CLI::App* cmd, std::string& device) {
  device = "cpu";
  cmd->add_option("--device", device, "cpu, cuda or cuda:N (builds with -DLUMEN_CUDA=ON)")->capture_default_str();
}

}  // namespace lumen::cli
