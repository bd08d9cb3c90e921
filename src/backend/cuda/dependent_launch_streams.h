#pragma once
// Internal to the CUDA backend: which streams queue their kernels as programmatic dependent
// launches (dependent_launch.cuh). A backend answers for its own stream
// (CudaBackendOptions::dependent_launch on a device of compute capability 9.0 or later) and
// forgets it when the stream goes; the kernels' launch functions, which see only the stream, ask.
// Plain C++ over the stream's address, so unit_cuda_host tests it without a device.
namespace lumen::backend::cuda {

// Sets (on) or clears (off) `stream`'s answer; thread-safe, as backends on several threads may
// come and go while another launches.
void set_dependent_launch(const void* stream, bool on);
// Whether kernels queued on `stream` may start before the kernel ahead of them ends. False for a
// stream never set (the default stream, another library's).
bool dependent_launch(const void* stream);

}  // namespace lumen::backend::cuda
