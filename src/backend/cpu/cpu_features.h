#pragma once
// Which x86 instruction-set level the CPU kernels may use. Detected once at run time from CPUID
// (and the OS's XSAVE state), so one binary runs everywhere: the SIMD kernels live in their own
// translation units compiled with their own -m flags and are only called when this says so.
#include <optional>
#include <string_view>

namespace lumen::backend::cpu {

// Ordered: each level implies everything below it.
enum class Isa {
  kScalar = 0,  // portable C++, the reference
  kAvx2 = 1,    // AVX2 + FMA + F16C
  kAvx512 = 2,  // AVX-512 F/BW/VL + VNNI (used on 256-bit vectors for vpdpbusd/vpdpwssd)
};

// The best level this CPU and OS support.
Isa detected_isa();

// detected_isa(), lowered by the environment variable LUMEN_ISA=scalar|avx2|avx512 when set (a
// request above what the CPU has is capped; an unknown value is ignored). Read once.
Isa selected_isa();

std::string_view isa_name(Isa isa);
std::optional<Isa> isa_from_name(std::string_view name);

}  // namespace lumen::backend::cpu
