#pragma once
// The simulated device's context switch between a block's threads (cuda_sim.cc). glibc's
// swapcontext also saves the signal mask, a system call per switch, which was more than half of
// the simulation's time (a thread switches at every barrier and warp-wide operation): the fast
// switch pushes the callee-saved registers and the floating-point control words on the stack being
// left and swaps the stack pointer (x86-64 System V). Under ASan the switch stays swapcontext,
// whose interceptor keeps ASan's picture of the stacks right (exceptions thrown on a fiber's stack
// confused it after the fast switch).
// GCC says __SANITIZE_ADDRESS__, clang (before 16) only __has_feature(address_sanitizer).
#if defined(__SANITIZE_ADDRESS__)
#define LUMEN_SIM_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LUMEN_SIM_ASAN 1
#endif
#endif
#if !defined(LUMEN_SIM_ASAN)
#define LUMEN_SIM_ASAN 0
#endif

#if LUMEN_SIM_ASAN
#include <ucontext.h>
#endif

#include <cstddef>

namespace cuda_sim::fiber {

struct Context {
#if LUMEN_SIM_ASAN
  ucontext_t context{};
#else
  void* sp = nullptr;  // while switched out
#endif
};

// Makes `c` start `entry` (which must never return) on [stack, stack + bytes).
void prepare(Context& c, char* stack, size_t bytes, void (*entry)());
// Saves the running context into `from` and resumes `to`.
void switch_to(Context& from, Context& to);

}  // namespace cuda_sim::fiber
