#include "fiber_switch.h"

#include <cstdint>
#include <cstring>

#if LUMEN_SIM_ASAN

namespace cuda_sim::fiber {

void prepare(Context& c, char* stack, size_t bytes, void (*entry)()) {
  getcontext(&c.context);
  c.context.uc_stack.ss_sp = stack;
  c.context.uc_stack.ss_size = bytes;
  c.context.uc_link = nullptr;
  makecontext(&c.context, entry, 0);
}

void switch_to(Context& from, Context& to) { swapcontext(&from.context, &to.context); }

}  // namespace cuda_sim::fiber

#else

#if !defined(__x86_64__)
#error "cuda_sim's fiber switch is written for x86-64"
#endif

extern "C" void lumen_sim_fiber_switch(void** save, void* load);

// Pushes rbp, rbx, r12-r15 and the MXCSR / x87 control words; stores rsp; loads the other
// context's rsp and pops the same in reverse; returns into it.
asm(R"(
  .pushsection .text
  .globl lumen_sim_fiber_switch
  .type lumen_sim_fiber_switch, @function
lumen_sim_fiber_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  subq $8, %rsp
  stmxcsr (%rsp)
  fnstcw 4(%rsp)
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  ldmxcsr (%rsp)
  fldcw 4(%rsp)
  addq $8, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size lumen_sim_fiber_switch, .-lumen_sim_fiber_switch
  .popsection
)");

namespace cuda_sim::fiber {

void prepare(Context& c, char* stack, size_t bytes, void (*entry)()) {
  char* const top = stack + bytes;
  // `entry`'s address where `ret` finds it, 16-byte aligned, so that entry starts as if called
  // (rsp + 8 a multiple of 16); below it six zeroed registers and the control words.
  auto at = reinterpret_cast<uintptr_t>(top) & ~uintptr_t{15};
  at -= 16;
  auto* slots = reinterpret_cast<uint64_t*>(at);
  slots[0] = reinterpret_cast<uint64_t>(entry);
  slots[1] = 0;  // a return address of 0 for entry's frame: unwinders stop there
  uint32_t mxcsr = 0;
  uint16_t fpu = 0;
  asm volatile("stmxcsr %0" : "=m"(mxcsr));
  asm volatile("fnstcw %0" : "=m"(fpu));
  auto* frame = slots - 7;  // 6 registers + the control words
  std::memset(frame, 0, 7 * sizeof(uint64_t));
  std::memcpy(reinterpret_cast<char*>(frame), &mxcsr, 4);
  std::memcpy(reinterpret_cast<char*>(frame) + 4, &fpu, 2);
  c.sp = frame;
}

void switch_to(Context& from, Context& to) { lumen_sim_fiber_switch(&from.sp, to.sp); }

}  // namespace cuda_sim::fiber

#endif
