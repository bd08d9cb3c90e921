// Instruction-set detection and the LUMEN_ISA override's parsing.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "backend/cpu/cpu_features.h"

namespace lumen::backend::cpu {
namespace {

TEST(CpuFeatures, NamesRoundTrip) {
  for (const Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    EXPECT_EQ(isa_from_name(isa_name(isa)), isa);
  }
  EXPECT_FALSE(isa_from_name("sse9").has_value());
  EXPECT_FALSE(isa_from_name("").has_value());
}

TEST(CpuFeatures, SelectedNeverExceedsDetected) {
  EXPECT_LE(selected_isa(), detected_isa());
}

// Cross-check CPUID against the kernel's view of the CPU where /proc/cpuinfo exists.
TEST(CpuFeatures, AgreesWithProcCpuinfo) {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const auto has = [&](const std::string& flag) { return (line + " ").find(" " + flag + " ") != std::string::npos; };
    const bool avx2 = has("avx2") && has("fma") && has("f16c");
    const bool avx512 = avx2 && has("avx512f") && has("avx512bw") && has("avx512vl") && has("avx512_vnni");
    EXPECT_EQ(detected_isa(), avx512 ? Isa::kAvx512 : (avx2 ? Isa::kAvx2 : Isa::kScalar));
    return;
  }
  GTEST_SKIP() << "no /proc/cpuinfo flags line";
}

}  // namespace
}  // namespace lumen::backend::cpu
