#pragma once
// Holding a step's work back on the device while a profiler times its ops (Backend::time_ops):
// the host queues a step's ops more slowly than a replayed step runs them, so op by op the device
// would wait for the host between ops and an op's events would time the host's pace. A one-thread
// kernel at the step's start waits on a flag in page-locked host memory instead; the host sets it
// at its first wait for the device (release_op_hold, called before every such wait in this
// backend), by when the ops queued behind it run back to back. A wait the backend does not know
// of (the driver's own) can only delay the step: the kernel gives up after its timeout.
#include <cuda_runtime_api.h>

#include <cstdint>

namespace lumen::backend::cuda {

// Queues on `stream` a kernel that returns once *flag is nonzero (flag: the device's address of
// mapped page-locked memory) or timeout_ns have passed on the device's clock; then it writes 1
// to *timed_out when the timeout ended it.
void launch_op_hold(const volatile uint32_t* flag, uint32_t* timed_out, uint64_t timeout_ns, cudaStream_t stream);

// The flag that release_op_hold sets (its host address; null: nothing is held). One holder at a
// time in the process: the backend that times its ops.
void set_op_hold(uint32_t* flag);
// Lets the held work run, if any. Call before every wait for the device.
void release_op_hold();
// Which hold is on now (0: none; each hold has its own number): work queued under a hold number
// waits behind that hold while the same number is on (release it before waiting for that work).
uint64_t current_op_hold();

}  // namespace lumen::backend::cuda
