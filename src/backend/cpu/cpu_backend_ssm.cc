// The CPU backend's state-space ops (Backend::ssm_conv, ssm_scan): operand checks, then the
// kernels of ssm_conv.h and ssm_scan.h spread over the pool, one task per sequence and slice of
// channels (the convolution) or per sequence and head (the scan; a prompt's chunked form first
// computes its chunks' scores, one task per group and chunk). Sequences' states are
// disjoint, so tasks never share memory they write.
#include <algorithm>
#include <functional>
#include <string_view>
#include <utility>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/ssm_conv.h"
#include "backend/cpu/ssm_scan.h"
#include "backend/cpu/ssm_scan_chunked.h"
#include "util/error.h"

namespace lumen::backend {

namespace {

// Channels per convolution task: enough work to be worth a wake-up, few enough to spread a
// decode step's one row over the pool.
constexpr int64_t kConvChannelsPerTask = 256;
// Below these many outputs (rows x channels) the convolution runs on the calling thread: a
// decode row of mamba2-130m (1792 channels) is a few microseconds of work, less than waking the
// pool costs, and a decode step would otherwise wait on the pool once more per layer.
constexpr int64_t kConvSerialOutputs = 8192;

// A sequence's rows from which the scan takes the chunked form (ssm_scan_chunked.h): below, a
// chunk's products cost more than they save.
constexpr int64_t kSsmChunkedMinTokens = 16;

size_t stride(const TensorView& t) { return t.row_bytes / sizeof(float); }

}  // namespace

void CpuBackend::do_ssm_conv(const TensorView& x, const TensorView& weight, const TensorView& bias,
                             std::span<const SsmSequence> seqs, TensorView& out) {
  // The arguments were checked in front of every backend (common/ssm_checks.h).
  const int64_t channels = x.dims[0], n = x.rows(), kernel = weight.dims[0];
  const int64_t slices = (channels + kConvChannelsPerTask - 1) / kConvChannelsPerTask;
  const auto n_tasks = static_cast<int64_t>(seqs.size()) * slices;
  auto run = [&](int64_t task, unsigned) {
    const SsmSequence& s = seqs[static_cast<size_t>(task / slices)];
    const int64_t c0 = (task % slices) * kConvChannelsPerTask;
    cpu::SsmConvTask t{x.row<const float>(s.first_token),
                       stride(x),
                       s.n_tokens,
                       static_cast<const float*>(weight.data),
                       kernel,
                       static_cast<const float*>(bias.data),
                       static_cast<float*>(s.conv_window.data),
                       channels,
                       out.row<float>(s.first_token),
                       stride(out)};
    cpu::ssm_conv_channels(t, c0, std::min(channels, c0 + kConvChannelsPerTask));
  };
  if (n_tasks <= 1 || pool_.size() == 1 || n * channels < kConvSerialOutputs) {
    for (int64_t task = 0; task < n_tasks; ++task) run(task, 0);
    return;
  }
  pool_.parallel_for(n_tasks, run);
}

void CpuBackend::do_ssm_scan(const TensorView& x, const TensorView& dt, const TensorView& b, const TensorView& c,
                             const SsmScanWeights& weights, std::span<const SsmSequence> seqs, TensorView& y) {
  // The arguments were checked in front of every backend (common/ssm_checks.h).
  const int64_t inner = x.dims[0], head_dim = weights.head_dim, groups = weights.groups;
  const int64_t heads = inner / head_dim, state_size = b.dims[0] / groups;
  auto task_of = [&](const SsmSequence& s) {
    return cpu::SsmScanTask{x.row<const float>(s.first_token),
                            stride(x),
                            dt.row<const float>(s.first_token),
                            stride(dt),
                            b.row<const float>(s.first_token),
                            stride(b),
                            c.row<const float>(s.first_token),
                            stride(c),
                            s.n_tokens,
                            head_dim,
                            state_size,
                            heads / groups,
                            static_cast<const float*>(weights.a->data),
                            static_cast<const float*>(weights.d->data),
                            static_cast<const float*>(weights.dt_bias->data),
                            static_cast<float*>(s.state.data),
                            y.row<float>(s.first_token),
                            stride(y)};
  };
  // Prompts take the chunked form, decode rows (and short chunks) the token scan. Each chunked
  // sequence's scores (every group and chunk) sit at its offset in the scratch, then one
  // worker's scratch per pool thread.
  const bool chunked_here = cpu::ssm_chunked_available(head_dim, state_size);
  std::vector<int64_t>& scores_at = ssm_scores_at_;
  scores_at.assign(seqs.size(), -1);
  size_t scores_floats = 0;
  auto& score_tasks = ssm_score_tasks_;  // (sequence, group * chunks + chunk)
  score_tasks.clear();
  for (size_t i = 0; i < seqs.size(); ++i) {
    if (!chunked_here || seqs[i].n_tokens < kSsmChunkedMinTokens) continue;
    scores_at[i] = static_cast<int64_t>(scores_floats);
    scores_floats += static_cast<size_t>(groups) * cpu::ssm_chunk_scores_floats(seqs[i].n_tokens);
    const int64_t chunks = (seqs[i].n_tokens + cpu::kSsmChunk - 1) / cpu::kSsmChunk;
    for (int64_t k = 0; k < groups * chunks; ++k) score_tasks.emplace_back(static_cast<int64_t>(i), k);
  }
  const size_t per_worker = score_tasks.empty() ? 0 : cpu::ssm_chunk_scratch_floats(head_dim, state_size);
  if (!score_tasks.empty()) ssm_scratch_.resize(scores_floats + per_worker * pool_.size());
  auto group_scores = [&](size_t seq, int64_t group) {
    return ssm_scratch_.data() + scores_at[seq] + group * cpu::ssm_chunk_scores_floats(seqs[seq].n_tokens);
  };
  auto worker_scratch = [&](unsigned worker) { return ssm_scratch_.data() + scores_floats + worker * per_worker; };
  // Generic, so the serial path (one thread, one task) builds no std::function (an allocation).
  auto parallel = [&](int64_t n_tasks, const auto& fn) {
    if (n_tasks <= 1 || pool_.size() == 1) {
      for (int64_t task = 0; task < n_tasks; ++task) fn(task, 0);
      return;
    }
    pool_.parallel_for(n_tasks, fn);
  };
  parallel(static_cast<int64_t>(score_tasks.size()), [&](int64_t task, unsigned worker) {
    const auto [seq, k] = score_tasks[static_cast<size_t>(task)];
    const int64_t chunks = (seqs[static_cast<size_t>(seq)].n_tokens + cpu::kSsmChunk - 1) / cpu::kSsmChunk;
    cpu::ssm_chunk_scores(task_of(seqs[static_cast<size_t>(seq)]), k / chunks, k % chunks,
                          group_scores(static_cast<size_t>(seq), k / chunks), worker_scratch(worker));
  });
  parallel(static_cast<int64_t>(seqs.size()) * heads, [&](int64_t task, unsigned worker) {
    const auto seq = static_cast<size_t>(task / heads);
    const int64_t head = task % heads;
    if (scores_at[seq] < 0) {
      cpu::ssm_scan_head(task_of(seqs[seq]), head);
    } else {
      cpu::ssm_scan_head_chunked(task_of(seqs[seq]), head, group_scores(seq, head / (heads / groups)),
                                 worker_scratch(worker));
    }
  });
}

}  // namespace lumen::backend
