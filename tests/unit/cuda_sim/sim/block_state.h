#pragma once
// Internal to the simulator (cuda_sim.cc, mma_sync.cc): a simulated block's state, its threads
// (fibers) and their warps, and what the warp-wide operations outside cuda_sim.cc use of it.
#include <array>
#include <cstdint>
#include <exception>
#include <string>
#include <vector>

#include "cuda_sim.h"
#include "fiber_switch.h"

namespace cuda_sim::detail {

inline constexpr unsigned kFullMask = 0xffffffffu;

struct PendingCopy {
  void* dst;
  const void* src;
  size_t bytes;
};

struct Thread {
  fiber::Context context;
  uint3 index{};
  unsigned lane = 0, warp = 0;
  bool done = false;
  char* stack = nullptr;
  size_t stack_bytes = 0;
  // cp.async groups: committed ones in order, then the copies not yet committed.
  std::vector<std::vector<PendingCopy>> groups;
  std::vector<PendingCopy> open;
#if LUMEN_SIM_ASAN
  void* fake_stack = nullptr;  // ASan's, while the thread is switched out
#endif
};

// What a warp-wide operation is, so that lanes meeting at different ones is an error.
enum class Meeting : uint8_t { Sync, Shuffle, Ballot, MmaF16, MmaS8, MmaS8K16 };

// A group of lanes meeting: the mask they name, who has arrived, and at what operation.
struct OpenMeeting {
  unsigned mask = 0;
  unsigned arrived = 0;
  Meeting kind = Meeting::Sync;
};

// A warp's rendezvous: lanes deposit their inputs and arrive; the last one in the mask computes
// every lane's result at once and releases them. Lanes of disjoint masks (a warp's halves in two
// branches) meet apart, at the same time, as on a GPU. A lane's input and result are its own,
// touched by other lanes only at a meeting it is part of, so a lane that resumes late still reads
// its own result, whatever meetings of other lanes happened in between.
struct WarpState {
  std::vector<OpenMeeting> open;      // at most one per lane
  unsigned live = 0;                  // lanes that have not returned, as bits
  std::array<uint64_t, 32> passes{};  // meetings each lane has been released from
  std::array<uint64_t, 32> slots{};   // each lane's value (shuffles, ballots)
  std::array<uint8_t, 32> sources{};  // the lane each lane's shuffle reads
  std::array<uint64_t, 32> results{};
  std::array<std::array<uint32_t, 6>, 32> fragments{};  // mma.sync's A and B registers
  std::array<void*, 32> accumulators{};                 // mma.sync's C, on each lane's stack
};

struct Block {
  std::vector<Thread> threads;
  fiber::Context scheduler;
  Thread* current = nullptr;
  size_t position = 0;  // the running thread's place in this round's order
  unsigned live = 0;
  unsigned barrier_arrived = 0;
  uint64_t barrier_generation = 0;
  bool barrier_all = true;     // __syncthreads_and's running answer
  bool barrier_answer = true;  // the released barrier's answer
  bool progress = false;       // something moved since the scheduler's last round
  std::vector<WarpState> warps;
  uint3 block_index{};
  dim3 block_dim, grid_dim;
  std::vector<unsigned char> dynamic_shared;
  std::exception_ptr error;
  std::string failure;  // fail()'s message: the launch throws it
#if LUMEN_SIM_ASAN
  void* scheduler_fake_stack = nullptr;
  const void* scheduler_stack = nullptr;
  size_t scheduler_stack_size = 0;
#endif
};

// The running block (outside a kernel: throws), and its running thread.
Block& block();
Thread& self();

// Every lane of `mask` meets here at the same kind of operation; true for the lane that completed
// the meeting (and computes every lane's result before anyone runs), false for the others.
bool warp_meet(unsigned mask, Meeting meeting);

// The running thread's warp.
WarpState& my_warp();

}  // namespace cuda_sim::detail
