#pragma once
// A `lumen synth` model written into a temporary file for a test, removed with this object.
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "model/synth.h"

namespace lumen::testing {

class SynthModelFile {
 public:
  explicit SynthModelFile(const model::SynthOptions& options) {
    static std::atomic<int> count{0};
    path_ = (std::filesystem::temp_directory_path() /
             ("lumen_synth_" + std::to_string(::getpid()) + "_" + std::to_string(count++) + ".gguf"))
                .string();
    model::write_synthetic_model(options, path_);
  }
  ~SynthModelFile() { std::filesystem::remove(path_); }
  SynthModelFile(const SynthModelFile&) = delete;
  SynthModelFile& operator=(const SynthModelFile&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace lumen::testing
