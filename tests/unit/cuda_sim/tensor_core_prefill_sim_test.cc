// tensor_core_prefill.cu's kernel itself on the simulated device (sim/cuda_sim.h): its shared
// memory staging of the paged cache (shuffled blocks, a chunk after cached keys, windows, GQA
// groups, several sequences a launch), its barriers and its mma.sync products, against the CPU
// backend's attention within the bound of the lane emulation's test (tests/unit/cuda_host, which
// follows the kernel's per-lane steps but not its indexing), in both thread orders.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "backend/cuda/tensor_core_prefill.h"
#include "backend/cuda/tensor_core_prefill_plan.h"
#include "unit/cuda_host/tensor_core_emulation.h"
#include "unit/cuda_host/tensor_core_prefill_setup.h"
#include "unit/cuda_sim/sim/cuda_sim.h"

namespace lumen::backend::cuda {
namespace {

using tc_prefill::Case;
using tc_prefill::PrefillSetup;

std::vector<float> simulated_kernel(const PrefillSetup& s) {
  const Case& c = s.c;
  const PrefillPlan plan = plan_tensor_core_prefill(s.slices, s.config, s.cache.block_size);
  std::vector<float> out(s.q.size(), NAN);
  TensorCorePrefillParams p;
  p.q = s.q.data();
  p.q_head_stride = c.head_dim;
  p.q_token_stride = c.n_heads * c.head_dim;
  p.out = out.data();
  p.out_head_stride = c.head_dim;
  p.out_token_stride = c.n_heads * c.head_dim;
  p.dims = c.head_dim;
  p.n_heads = c.n_heads;
  p.n_kv_heads = c.n_kv_heads;
  p.head_dim = c.head_dim;
  p.score = {s.config.scale, s.config.softcap, s.config.softcap != 0.0f ? s.config.scale / s.config.softcap : 0.0f};
  p.window = c.window;
  p.k = s.cache.k.data();
  p.v = s.cache.v.data();
  p.k_row_bytes = s.cache.row_bytes;
  p.v_row_bytes = s.cache.row_bytes;
  p.block_size = s.cache.block_size;
  p.seqs = plan.seqs.data();
  p.block_tables = plan.block_tables.data();
  p.tasks = plan.tasks.data();
  launch_tensor_core_prefill(p, static_cast<int64_t>(plan.tasks.size()), nullptr);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);
  return out;
}

class SimulatedTensorCorePrefill : public ::testing::TestWithParam<Case> {
 protected:
  void TearDown() override { cuda_sim::set_schedule(cuda_sim::Schedule::Forward); }
};

TEST_P(SimulatedTensorCorePrefill, MatchesTheCpuBackend) {
  PrefillSetup s(GetParam());
  const std::vector<float> cpu = s.cpu_attention();
  for (const auto schedule : {cuda_sim::Schedule::Forward, cuda_sim::Schedule::Reverse}) {
    cuda_sim::set_schedule(schedule);
    const std::vector<float> got = simulated_kernel(s);
    // The bound of the lane emulation's test (measured 2.9e-4 to 4.0e-4 there).
    EXPECT_LE(emulation::max_relative_difference(cpu, got), 1e-3);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, SimulatedTensorCorePrefill, ::testing::ValuesIn(tc_prefill::prefill_cases()),
                         [](const ::testing::TestParamInfo<Case>& case_info) {
                           return "case" + std::to_string(case_info.index);
                         });

}  // namespace
}  // namespace lumen::backend::cuda
