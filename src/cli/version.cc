#include "cli/version.h"

#include <fmt/format.h>

#include "backend/cpu/cpu_features.h"
#include "git_describe.h"

namespace lumen::cli {

std::string version_text() {
  namespace cpu = backend::cpu;
#ifdef LUMEN_HAS_CUDA
  constexpr const char* kCuda = "yes";
#else
  constexpr const char* kCuda = "no (build with -DLUMEN_CUDA=ON)";
#endif
#if defined(__SANITIZE_ADDRESS__)
  constexpr const char* kSanitizers = ", AddressSanitizer + UBSan";
#else
  constexpr const char* kSanitizers = "";
#endif
  return fmt::format(
      "lumen {} ({})\nbuild: {}{}\nCPU kernels: scalar, avx2, avx512; this CPU: {}, in use: {} (LUMEN_ISA lowers it)\n"
      "CUDA: {}\n",
      LUMEN_VERSION, LUMEN_GIT_DESCRIBE, LUMEN_BUILD_TYPE, kSanitizers, cpu::isa_name(cpu::detected_isa()),
      cpu::isa_name(cpu::selected_isa()), kCuda);
}

}  // namespace lumen::cli
