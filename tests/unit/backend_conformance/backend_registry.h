#pragma once
// The backends the conformance suite runs: one entry per compiled backend. Adding a backend
// means adding one entry in backend_registry.cc.
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "backend/backend.h"
#include "conformance_case.h"

namespace lumen::backend::conformance {

struct BackendEntry {
  std::string_view name;  // prefixes the test names: "cpu_matmul_Q4_K_256x16x1"
  // Why this backend cannot run in this process (no device, an instruction-set level the CPU
  // lacks), or empty when it can. Its tests are then skipped with this reason.
  std::function<std::string()> unavailable;
  std::function<std::unique_ptr<Backend>()> make;
  // Whether the backend implements this row's op for its type; a row it does not support is
  // skipped with a message saying so. The CPU backend, the reference, supports every row.
  std::function<bool(const Case&)> supports;
};

const std::vector<BackendEntry>& backends();

}  // namespace lumen::backend::conformance
