#include "profile/machine_ceilings.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "backend/cpu/cpu_features.h"
#include "profile/ceiling_probes.h"

namespace lumen::profile {

namespace probes {
uint64_t read_sum_scalar(const void* p, size_t bytes) {
  const auto* words = static_cast<const uint64_t*>(p);
  uint64_t a = 0, b = 0, c = 0, d = 0;
  for (size_t i = 0; i < bytes / 8; i += 4) {
    a += words[i];
    b += words[i + 1];
    c += words[i + 2];
    d += words[i + 3];
  }
  return a + b + c + d;
}
}  // namespace probes

namespace {

using backend::cpu::Isa;

// The best of `rounds` runs of every thread doing `work(worker)` at once, in seconds.
template <typename Work>
double best_seconds(ThreadPool& pool, int rounds, Work&& work) {
  double best = 1e30;
  std::atomic<uint64_t> sink{0};
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    pool.parallel_for(pool.size(), [&](int64_t task, unsigned) {
      sink.fetch_add(static_cast<uint64_t>(work(static_cast<unsigned>(task))), std::memory_order_relaxed);
    });
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return best;
}

struct AlignedFree {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

MachineCeilings measure_ceilings(ThreadPool& pool, size_t buffer_mib, int64_t peak_iterations) {
  MachineCeilings c;
  const Isa isa = backend::cpu::selected_isa();
  c.isa = std::string(backend::cpu::isa_name(isa));
  c.threads = pool.size();
  const unsigned n = pool.size();

  // Read bandwidth: each thread streams its own slice (256-byte multiple) once per round.
  const size_t slice = (buffer_mib << 20) / n / 256 * 256;
  std::unique_ptr<uint8_t, AlignedFree> buffer(static_cast<uint8_t*>(std::aligned_alloc(64, slice * n)));
  // Written by the threads that read it (first touch places pages near them).
  pool.parallel_for(n, [&](int64_t t, unsigned) { std::memset(buffer.get() + static_cast<size_t>(t) * slice, 1, slice); });
  auto read = [&](unsigned t) {
    const uint8_t* p = buffer.get() + static_cast<size_t>(t) * slice;
    if (isa >= Isa::kAvx512) return probes::read_sum_avx512(p, slice);
    if (isa >= Isa::kAvx2) return probes::read_sum_avx2(p, slice);
    return probes::read_sum_scalar(p, slice);
  };
  c.read_gbps = static_cast<double>(slice * n) / best_seconds(pool, 7, read) / 1e9;

  // Peaks: ops per iteration per thread, over the best round's time.
  const int64_t iterations = std::max<int64_t>(peak_iterations, 4);
  // Operations per vector lane of all threads' chains over all iterations.
  const double work = static_cast<double>(probes::kChains) * static_cast<double>(iterations) * n;
  if (isa >= Isa::kAvx512) {
    c.fp32_gflops = work * 16 * 2 /
                    best_seconds(pool, 3, [=](unsigned) { return static_cast<uint64_t>(probes::fma_avx512(iterations)); }) / 1e9;
    c.int8_gops = work * 64 * 2 /
                  best_seconds(pool, 3, [=](unsigned) { return static_cast<uint64_t>(probes::dot_i8_avx512(iterations)); }) / 1e9;
    c.int8_256_gops = work * 32 * 2 /
                      best_seconds(pool, 3, [=](unsigned) { return static_cast<uint64_t>(probes::dot_i8_avx512_ymm(iterations)); }) /
                      1e9;
    c.int8_gops = std::max(c.int8_gops, c.int8_256_gops);
  } else if (isa >= Isa::kAvx2) {
    c.fp32_gflops = work * 8 * 2 /
                    best_seconds(pool, 3, [=](unsigned) { return static_cast<uint64_t>(probes::fma_avx2(iterations)); }) / 1e9;
    c.int8_gops = work * 32 * 2 /
                  best_seconds(pool, 3, [=](unsigned) { return static_cast<uint64_t>(probes::dot_i8_avx2(iterations)); }) / 1e9;
  } else {
    // Portable code: a scalar FMA chain per lane the compiler may or may not vectorize.
    auto scalar = [=](unsigned) {
      float acc[probes::kChains];
      for (int i = 0; i < probes::kChains; ++i) acc[i] = static_cast<float>(i);
      for (int64_t it = 0; it < iterations / 4; ++it) {
        for (float& a : acc) a = a * 0.999999f + 1e-7f;
      }
      float sum = 0;
      for (float a : acc) sum += a;
      return static_cast<uint64_t>(sum);
    };
    c.fp32_gflops = work / 4 * 2 / best_seconds(pool, 3, scalar) / 1e9;
    c.int8_gops = c.fp32_gflops;  // no int8 dot-product instructions
  }
  return c;
}

MachineCeilings device_ceilings(const backend::DeviceCeilings& device) {
  MachineCeilings c;
  c.device = device.device;
  c.isa = "cuda";
  c.read_gbps = device.copy_gbps;
  c.fp32_gflops = device.f16_tflops * 1e3;
  c.int8_gops = device.int8_tops * 1e3;
  return c;
}

}  // namespace lumen::profile
