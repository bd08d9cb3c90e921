#pragma once
// `--device`: which backend runs the model, for every command that loads one. "cpu" (the
// default; --threads sets its thread pool) or "cuda" / "cuda:N" (a build with -DLUMEN_CUDA=ON).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "backend/backend.h"

namespace lumen::cli {

inline void add_device_option(CLI::App* cmd, std::string& device) {
  device = "cpu";
  cmd->add_option("--device", device, "cpu, cuda or cuda:N (builds with -DLUMEN_CUDA=ON)")->capture_default_str();
}

// Throws lumen::Error for an unknown device, a CUDA device in a build without CUDA, or a CUDA
// device that does not exist.
std::unique_ptr<backend::Backend> make_backend(const std::string& device, unsigned threads);

}  // namespace lumen::cli
