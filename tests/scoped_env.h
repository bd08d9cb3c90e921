#pragma once
// An environment variable set (or unset, for a null value) for a scope, then put back as it
// was: tests that pin a LUMEN_* switch or a simulated device's size while a checking run
// (scripts/gpu_check.sh) may have set it for the whole binary.
#include <cstdlib>
#include <optional>
#include <string>

namespace lumen::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* before = std::getenv(name); before != nullptr) before_ = before;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (before_) {
      setenv(name_, before_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> before_;
};

}  // namespace lumen::testing
