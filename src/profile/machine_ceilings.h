#pragma once
// The machine's limits, measured by `lumen bench profile` itself rather than typed in: the read
// bandwidth all threads reach streaming a buffer far larger than the caches, and the peak f32
// FMA and int8 dot-product rates of all threads with enough independent chains to fill the
// pipelines. A roofline puts each op's achieved rate under these.
#include <string>

#include "backend/backend.h"

#include "util/thread_pool.h"

namespace lumen::profile {

// A device's (device not empty; Backend::measure_device_ceilings) fill the same fields:
// read_gbps is its copy bandwidth (bytes read plus written), fp32_gflops its f16 tensor-core
// matrix product rate and int8_gops its int8 one, the roofs its matmuls run under.
struct MachineCeilings {
  std::string device;         // "NVIDIA H200"; empty for the CPU
  std::string isa;            // the instruction set the probes (and the kernels) use
  unsigned threads = 0;
  double read_gbps = 0;       // GB/s (1e9 bytes)
  double fp32_gflops = 0;     // multiply-add counted as 2
  double int8_gops = 0;       // u8 x s8 multiply-adds counted as 2, the widest vectors
  double int8_256_gops = 0;   // the same on 256-bit vectors (what the matmul kernels use), AVX-512 only
};

// Takes about a second. `buffer_mib`: the streamed buffer (keep it well above the last-level
// cache); `peak_iterations`: rounds of each peak probe's chains per thread (tests take fewer).
MachineCeilings measure_ceilings(ThreadPool& pool, size_t buffer_mib = 256, int64_t peak_iterations = 4'000'000);

// A device's measured limits in this form.
MachineCeilings device_ceilings(const backend::DeviceCeilings& device);

}  // namespace lumen::profile
