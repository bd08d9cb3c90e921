// The simulated device of cuda_sim.h: a block's threads as fibers (fiber_switch.h) on the calling thread,
// a scheduler that resumes each in turn until it reaches a barrier, and the warp-wide operations
// as exchanges through the warp's slots between two barriers.
#include "cuda_sim.h"

#include "fiber_switch.h"
#include "block_state.h"

#include <fmt/format.h>
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#if LUMEN_SIM_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

uint3 threadIdx{};
uint3 blockIdx{};
dim3 blockDim;
dim3 gridDim;

namespace cuda_sim {

using namespace detail;

namespace {

// A thread's locals. Not more: under ASan, swapcontext clears the shadow of a whole stack at each
// switch into it, by memset below 32 KiB of shadow (256 KiB of stack) and by remapping pages above,
// ten times slower.
constexpr size_t kStackBytes = size_t{256} << 10;
constexpr size_t kDefaultDynamicShared = 48 << 10;
constexpr size_t kMostDynamicShared = 227 << 10;

Block* g_block = nullptr;
Schedule g_schedule = Schedule::Forward;
cudaError_t g_last_error = cudaSuccess;
std::map<const void*, size_t> g_dynamic_shared_limit;

}  // namespace

Block& detail::block() {
  if (g_block == nullptr) throw std::logic_error("cuda_sim: a device function called outside a kernel");
  return *g_block;
}
Thread& detail::self() { return *block().current; }

namespace {

// The thread after the running one in this round's order (g_schedule), or null at the round's end.
Thread* next_in_round(Block& b) {
  const size_t n = b.threads.size();
  for (size_t k = b.position + 1; k < n; ++k) {
    Thread& t = b.threads[g_schedule == Schedule::Forward ? k : n - 1 - k];
    if (!t.done) {
      b.position = k;
      return &t;
    }
  }
  return nullptr;
}

// Hands the CPU on from the running thread: straight to the next thread of the round, or to the
// scheduler at the round's end (half the switches of going through the scheduler every time).
// Returns when some thread or the scheduler resumes this one.
void pass_on(Thread& t) {
  Block& b = block();
  Thread* next = next_in_round(b);
  if (next == nullptr) {
#if LUMEN_SIM_ASAN
    __sanitizer_start_switch_fiber(t.done ? nullptr : &t.fake_stack, b.scheduler_stack, b.scheduler_stack_size);
#endif
    fiber::switch_to(t.context, b.scheduler);
  } else {
    b.current = next;
    threadIdx = next->index;
#if LUMEN_SIM_ASAN
    __sanitizer_start_switch_fiber(t.done ? nullptr : &t.fake_stack, next->stack, next->stack_bytes);
#endif
    fiber::switch_to(t.context, next->context);
  }
#if LUMEN_SIM_ASAN
  __sanitizer_finish_switch_fiber(t.fake_stack, nullptr, nullptr);
#endif
}

// Lets the other threads run; returns when this one's turn comes again.
void yield() { pass_on(*block().current); }

std::function<void()>* g_body = nullptr;

// Ends the running thread with an error the launch reports: the thread switches to the scheduler
// for good, which throws from its own stack. Not [[noreturn]]: ASan unpoisons "the stack" before
// every call to such a function, and takes a fiber's stack for a broken one (as it does when an
// exception unwinds one). The message is formatted here, into the block: a temporary string in a
// caller's frame, which never ends, would leak.
template <typename... Args>
void fail(fmt::format_string<Args...> format, Args&&... args) {
  Block& b = block();
  Thread& t = *b.current;
  if (b.failure.empty()) {
    b.failure = fmt::format("cuda_sim: block ({}, {}, {}) thread ({}, {}, {}): ", b.block_index.x, b.block_index.y,
                            b.block_index.z, t.index.x, t.index.y, t.index.z);
    b.failure += fmt::format(format, std::forward<Args>(args)...);
  }
#if LUMEN_SIM_ASAN
  __sanitizer_start_switch_fiber(nullptr, b.scheduler_stack, b.scheduler_stack_size);
#endif
  // Never resumed; a loop the compiler cannot prove endless, or it would call this noreturn.
  static volatile bool resumed = false;
  do fiber::switch_to(t.context, b.scheduler);
  while (!resumed);
}

void thread_entry() {
  Block& b = block();
#if LUMEN_SIM_ASAN
  // The first thread learns the scheduler's stack from the switch; the others, started by a
  // thread, from the first.
  if (b.scheduler_stack == nullptr) {
    __sanitizer_finish_switch_fiber(nullptr, &b.scheduler_stack, &b.scheduler_stack_size);
  } else {
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);
  }
#endif
  try {
    (*g_body)();
  } catch (...) {
    if (!b.error) b.error = std::current_exception();
  }
  Thread& t = *b.current;
  t.done = true;
  --b.live;
  b.warps[t.warp].live &= ~(1u << t.lane);
  b.progress = true;
  // Barriers the others wait at may now be complete.
  if (b.barrier_arrived != 0 && b.barrier_arrived == b.live) {
    b.barrier_arrived = 0;
    b.barrier_answer = b.barrier_all;
    b.barrier_all = true;
    ++b.barrier_generation;
  }
  if (b.error) {
#if LUMEN_SIM_ASAN
    __sanitizer_start_switch_fiber(nullptr, b.scheduler_stack, b.scheduler_stack_size);
#endif
    fiber::switch_to(t.context, b.scheduler);  // which rethrows; never resumed
  }
  pass_on(t);  // never resumed
}

}  // namespace

bool detail::warp_meet(unsigned mask, Meeting meeting) {
  Block& b = block();
  Thread& t = *b.current;
  WarpState& w = b.warps[t.warp];
  if ((mask & (1u << t.lane)) == 0) fail("lane {} is not in the mask {:#x} it passed", t.lane, mask);
  const unsigned present = w.live | (1u << t.lane);
  const size_t first = static_cast<size_t>(t.warp) * 32;
  const unsigned exists = b.threads.size() - first >= 32 ? kFullMask : (1u << (b.threads.size() - first)) - 1;
  if ((mask & ~exists) != 0) fail("mask {:#x} names lanes the block does not have", mask);
  if ((mask & ~present) != 0) {
    fail("mask {:#x} names lanes that have returned ({:#x})", mask, mask & ~present);
  }
  OpenMeeting* joined = nullptr;
  for (OpenMeeting& m : w.open) {
    if (m.mask == mask) {
      joined = &m;
    } else if ((m.mask & mask) != 0) {
      fail("lanes meet with masks {:#x} and {:#x} at once", m.mask, mask);
    }
  }
  if (joined == nullptr) joined = &w.open.emplace_back(OpenMeeting{mask, 0, meeting});
  if (joined->kind != meeting) {
    fail("lanes meet at different warp-wide operations ({} and {})", static_cast<int>(joined->kind),
         static_cast<int>(meeting));
  }
  joined->arrived |= 1u << t.lane;
  b.progress = true;
  if (joined->arrived == mask) {
    w.open.erase(w.open.begin() + (joined - w.open.data()));
    for (unsigned lane = 0; lane < 32; ++lane) {
      if ((mask >> lane & 1u) != 0) ++w.passes[lane];
    }
    return true;
  }
  const uint64_t passes = w.passes[t.lane];
  while (w.passes[t.lane] == passes) yield();
  return false;
}

WarpState& detail::my_warp() { return block().warps[self().warp]; }

void set_schedule(Schedule schedule) { g_schedule = schedule; }

void* dynamic_shared() { return block().dynamic_shared.data(); }

void syncthreads() { (void)syncthreads_and(true); }

bool syncthreads_and(bool predicate) {
  Block& b = block();
  const uint64_t generation = b.barrier_generation;
  b.barrier_all = b.barrier_all && predicate;
  b.progress = true;
  if (++b.barrier_arrived == b.live) {
    b.barrier_arrived = 0;
    b.barrier_answer = b.barrier_all;
    b.barrier_all = true;
    ++b.barrier_generation;
    return b.barrier_answer;
  }
  while (b.barrier_generation == generation) yield();
  return b.barrier_answer;
}

void syncwarp(unsigned mask) { (void)warp_meet(mask, Meeting::Sync); }

uint64_t shuffle(unsigned mask, uint64_t bits, Shuffle kind, int arg, int width) {
  if (width <= 0 || width > 32 || (width & (width - 1)) != 0) fail("shuffle width {}", width);
  Thread& t = self();
  WarpState& w = my_warp();
  const int lane = static_cast<int>(t.lane);
  const int segment = lane & ~(width - 1);
  int source = lane;
  switch (kind) {
    case Shuffle::Index: source = segment + (arg & (width - 1)); break;
    case Shuffle::Up: source = lane - segment >= arg ? lane - arg : lane; break;
    case Shuffle::Down: source = lane - segment + arg < width ? lane + arg : lane; break;
    case Shuffle::Xor: source = ((lane ^ arg) & ~(width - 1)) == segment ? lane ^ arg : lane; break;
  }
  if ((mask & (1u << source)) == 0) fail("shuffle reads lane {}, outside the mask {:#x}", source, mask);
  w.slots[t.lane] = bits;
  w.sources[t.lane] = static_cast<uint8_t>(source);
  if (warp_meet(mask, Meeting::Shuffle)) {
    for (unsigned i = 0; i < 32; ++i) {
      if ((mask >> i & 1u) != 0) w.results[i] = w.slots[w.sources[i]];
    }
  }
  return w.results[t.lane];
}

unsigned ballot(unsigned mask, bool predicate) {
  Thread& t = self();
  WarpState& w = my_warp();
  w.slots[t.lane] = predicate ? 1 : 0;
  if (warp_meet(mask, Meeting::Ballot)) {
    unsigned votes = 0;
    for (unsigned lane = 0; lane < 32; ++lane) {
      if ((mask >> lane & 1u) != 0 && w.slots[lane] != 0) votes |= 1u << lane;
    }
    for (unsigned i = 0; i < 32; ++i) w.results[i] = votes;
  }
  return static_cast<unsigned>(w.results[t.lane]);
}

void trap() { fail("__trap()"); }

void copy_async(void* dst, const void* src, size_t bytes) { self().open.push_back({dst, src, bytes}); }

void commit_copies() {
  Thread& t = self();
  t.groups.push_back(std::move(t.open));
  t.open.clear();
}

void wait_copies(int pending) {
  Thread& t = self();
  while (t.groups.size() > static_cast<size_t>(pending)) {
    for (const PendingCopy& c : t.groups.front()) std::memcpy(c.dst, c.src, c.bytes);
    t.groups.erase(t.groups.begin());
  }
}

cudaError_t take_last_error() { return std::exchange(g_last_error, cudaSuccess); }

cudaError_t set_max_dynamic_shared(const void* kernel, int bytes) {
  if (bytes < 0 || static_cast<size_t>(bytes) > kMostDynamicShared) return cudaErrorInvalidValue;
  g_dynamic_shared_limit[kernel] = static_cast<size_t>(bytes);
  return cudaSuccess;
}

namespace {

// Stacks for a block's threads: mapped once and kept (a fresh mapping per launch costs a page
// fault per thread and page touched, which dominated the tests' time).
class Stacks {
 public:
  ~Stacks() {
    if (base_ != nullptr) munmap(base_, bytes_);
  }
  void reserve(size_t n) {
    if (n * kStackBytes <= bytes_) return;
    if (base_ != nullptr) munmap(base_, bytes_);
    bytes_ = n * kStackBytes;
    base_ = static_cast<char*>(
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0));
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      bytes_ = 0;
      throw std::runtime_error("cuda_sim: no memory for the threads' stacks");
    }
  }
  char* at(size_t i) const { return base_ + i * kStackBytes; }

 private:
  size_t bytes_ = 0;
  char* base_ = nullptr;
};

Stacks g_stacks;

void run_block(Block& b, const Stacks& stacks) {
  const size_t n = b.threads.size();
  for (size_t i = 0; i < n; ++i) {
    Thread& t = b.threads[i];
    t = Thread{};
    t.index = {static_cast<unsigned>(i % b.block_dim.x), static_cast<unsigned>(i / b.block_dim.x % b.block_dim.y),
               static_cast<unsigned>(i / (b.block_dim.x * b.block_dim.y))};
    t.lane = static_cast<unsigned>(i % 32);
    t.warp = static_cast<unsigned>(i / 32);
    t.stack = stacks.at(i);
#if LUMEN_SIM_ASAN
    // The frames of the threads before, abandoned where they switched away for good, left their
    // redzones poisoned on this stack.
    __asan_unpoison_memory_region(t.stack, kStackBytes);
#endif
    // Each stack's top a different distance below its 256 KiB boundary: tops at equal offsets
    // would all fall in the same cache sets, and the threads' frames evict each other at every
    // switch (the switches then cost several times as much).
    const size_t stagger = i % 61 * 1088;
    t.stack_bytes = kStackBytes - stagger;
    fiber::prepare(t.context, t.stack, t.stack_bytes, thread_entry);
  }
  b.live = static_cast<unsigned>(n);
  b.barrier_arrived = 0;
  b.barrier_all = true;
  for (size_t w = 0; w < b.warps.size(); ++w) {
    b.warps[w].open.clear();  // empty after a finished block; kept allocated
    b.warps[w].passes = {};
    const size_t lanes = std::min<size_t>(32, n - 32 * w);
    b.warps[w].live = lanes == 32 ? kFullMask : (1u << lanes) - 1;
  }
  while (b.live > 0) {
    b.progress = false;
    // A round: the first live thread in order runs, and each hands on to the next (pass_on);
    // the last one switches back here.
    b.position = static_cast<size_t>(-1);
    Thread* first = next_in_round(b);
    b.current = first;
    threadIdx = first->index;
#if LUMEN_SIM_ASAN
    __sanitizer_start_switch_fiber(&b.scheduler_fake_stack, first->stack, first->stack_bytes);
#endif
    fiber::switch_to(b.scheduler, first->context);
#if LUMEN_SIM_ASAN
    __sanitizer_finish_switch_fiber(b.scheduler_fake_stack, nullptr, nullptr);
#endif
    b.current = nullptr;
    if (!b.failure.empty()) throw std::runtime_error(b.failure);
    if (b.error) std::rethrow_exception(b.error);
    if (!b.progress && b.live > 0) {
      throw std::runtime_error(
          fmt::format("cuda_sim: block ({}, {}, {}) can never finish: {} threads wait at __syncthreads, the rest at a "
                      "warp-wide operation whose lanes never all arrive",
                      b.block_index.x, b.block_index.y, b.block_index.z, b.barrier_arrived));
    }
  }
}

}  // namespace

bool run_grid(const void* kernel, dim3 grid, dim3 block_shape, size_t shared, const std::function<void()>& body) {
  const auto limit = g_dynamic_shared_limit.find(kernel);
  const size_t shared_limit = limit == g_dynamic_shared_limit.end() ? kDefaultDynamicShared : limit->second;
  const uint64_t threads = uint64_t{block_shape.x} * block_shape.y * block_shape.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || grid.y > 65535 || grid.z > 65535 || threads == 0 || threads > 1024 ||
      block_shape.z > 64) {
    g_last_error = cudaErrorInvalidConfiguration;
    return false;
  }
  if (shared > shared_limit) {
    g_last_error = cudaErrorInvalidValue;
    return false;
  }
  if (g_block != nullptr) throw std::logic_error("cuda_sim: a kernel launched from inside a kernel");
  if (kernels_skipped()) return true;
  g_stacks.reserve(threads);
  Block b;
  b.threads.resize(threads);
  b.warps.resize((threads + 31) / 32);
  b.block_dim = block_shape;
  b.grid_dim = grid;
  blockDim = block_shape;
  gridDim = grid;
  b.dynamic_shared.assign(std::max<size_t>(shared, 16), 0xcd);  // not zero: a kernel must write before it reads
  std::function<void()> run = body;
  g_body = &run;
  g_block = &b;
  try {
    for (unsigned z = 0; z < grid.z; ++z) {
      for (unsigned y = 0; y < grid.y; ++y) {
        for (unsigned x = 0; x < grid.x; ++x) {
          b.block_index = {x, y, z};
          blockIdx = b.block_index;
          run_block(b, g_stacks);
        }
      }
    }
  } catch (...) {
    g_block = nullptr;
    g_body = nullptr;
    throw;
  }
  g_block = nullptr;
  g_body = nullptr;
  return true;
}

}  // namespace cuda_sim
