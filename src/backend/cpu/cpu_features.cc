#include "backend/cpu/cpu_features.h"

#include <cstdint>
#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace lumen::backend::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
struct CpuidRegs {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
};

CpuidRegs cpuid(unsigned leaf, unsigned subleaf) {
  CpuidRegs r;
  if (__get_cpuid_count(leaf, subleaf, &r.eax, &r.ebx, &r.ecx, &r.edx) == 0) return CpuidRegs{};
  return r;
}

bool bit(unsigned value, int index) { return ((value >> index) & 1u) != 0; }

// XCR0: which register files the OS saves on a context switch. A CPU flag is useless if the OS
// does not preserve the registers it needs.
uint64_t xgetbv0() {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

Isa detect() {
  const CpuidRegs leaf1 = cpuid(1, 0);
  const bool osxsave = bit(leaf1.ecx, 27);
  if (!osxsave) return Isa::kScalar;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;     // SSE + AVX state
  const bool zmm_saved = (xcr0 & 0xe6) == 0xe6;   // + opmask, ZMM hi256, hi16 ZMM
  const CpuidRegs leaf7 = cpuid(7, 0);
  const bool fma = bit(leaf1.ecx, 12), f16c = bit(leaf1.ecx, 29), avx = bit(leaf1.ecx, 28);
  const bool avx2 = bit(leaf7.ebx, 5);
  if (!(ymm_saved && avx && avx2 && fma && f16c)) return Isa::kScalar;
  const bool avx512f = bit(leaf7.ebx, 16), avx512bw = bit(leaf7.ebx, 30);
  const bool avx512vl = bit(leaf7.ebx, 31), avx512vnni = bit(leaf7.ecx, 11);
  if (zmm_saved && avx512f && avx512bw && avx512vl && avx512vnni) return Isa::kAvx512;
  return Isa::kAvx2;
}
#else
Isa detect() { return Isa::kScalar; }
#endif

Isa select() {
  const Isa best = detected_isa();
  const char* requested = std::getenv("LUMEN_ISA");
  if (requested == nullptr) return best;
  const std::optional<Isa> wanted = isa_from_name(requested);
  if (!wanted) return best;
  return *wanted < best ? *wanted : best;
}

}  // namespace

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa selected_isa() {
  static const Isa isa = select();
  return isa;
}

std::string_view isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512: return "avx512";
  }
  return "scalar";
}

std::optional<Isa> isa_from_name(std::string_view name) {
  if (name == "scalar") return Isa::kScalar;
  if (name == "avx2") return Isa::kAvx2;
  if (name == "avx512") return Isa::kAvx512;
  return std::nullopt;
}

}  // namespace lumen::backend::cpu
