// What tensor parallelism's communication costs (issue 21): dist::Collectives::all_reduce_sum of
// the vectors a step all-reduces (a hidden state per token: SmolLM2's 576 floats, times the
// tokens of the step), timed on every rank. Run under mpirun:
//   mpirun -np 2 build/release/bench/all_reduce_latency [embedding]
// Prints one JSON line per size (rank 0): median and p90 microseconds per all-reduce.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <vector>

#include "dist/mpi_collectives.h"

int main(int argc, char** argv) {
  auto comm = lumen::dist::make_mpi_collectives(&argc, &argv);
  const long embedding = argc > 1 ? std::atol(argv[1]) : 576;
  for (long tokens : {1L, 4L, 16L, 64L, 512L}) {
    std::vector<float> data(static_cast<size_t>(embedding * tokens), 1.0f);
    std::vector<double> us;
    const int reps = tokens >= 512 ? 200 : 2000;
    for (int i = 0; i < reps + 50; ++i) {
      comm->barrier();
      const auto start = std::chrono::steady_clock::now();
      comm->all_reduce_sum(data);
      const double t = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
      if (i >= 50) us.push_back(t);  // after a warm-up
      std::fill(data.begin(), data.end(), 1.0f);
    }
    std::sort(us.begin(), us.end());
    if (comm->rank() == 0) {
      fmt::print("{{\"ranks\": {}, \"tokens\": {}, \"bytes\": {}, \"median_us\": {:.2f}, \"p90_us\": {:.2f}}}\n",
                 comm->size(), tokens, data.size() * sizeof(float), us[us.size() / 2], us[us.size() * 9 / 10]);
    }
  }
  return 0;
}
