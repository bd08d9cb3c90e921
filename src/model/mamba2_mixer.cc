#include "model/mamba2_mixer.h"

#include "model/state_cache.h"
#include "util/error.h"

namespace lumen::model {

namespace {

using backend::TensorView;

// Columns [first, first + count) of every row: a strided view of the same memory.
TensorView column_range(const TensorView& m, int64_t first, int64_t count) {
  TensorView view = m;
  view.dims[0] = count;
  view.data = static_cast<float*>(m.data) + first;
  return view;
}

}  // namespace

Mamba2Mixer::Mamba2Mixer(backend::Backend& backend, const HParams& hp) : backend_(backend), hp_(hp) {
  if (!has_ssm(hp)) fail("a Mamba 2 mixer for a model without {}.ssm.* hyperparameters", hp.architecture);
}

void Mamba2Mixer::ensure_capacity(int64_t n) {
  if (n <= capacity_) return;
  capacity_ = n;
  buffers_.clear();
  auto matrix = [&](uint64_t cols) {
    buffers_.push_back(backend_.allocate(cols * static_cast<size_t>(n) * sizeof(float)));
    return backend::f32_matrix(static_cast<float*>(buffers_.back()->data()), static_cast<int64_t>(cols), n);
  };
  zxbcdt_ = matrix(ssm_in_proj_width(hp_));
  xbc_ = matrix(ssm_conv_channels(hp_));
  y_ = matrix(hp_.ssm_inner_size);
}

void Mamba2Mixer::begin_batch(const ForwardBatch& batch) { begin_state_batch(batch, "a state-space model"); }

void Mamba2Mixer::forward(uint64_t layer, const LayerWeights& w, const ForwardBatch& batch, TensorView& h) {
  const int64_t n = h.dims[1];
  ensure_capacity(n);
  const auto inner = static_cast<int64_t>(hp_.ssm_inner_size);
  const auto channels = static_cast<int64_t>(ssm_conv_channels(hp_));
  const auto heads = static_cast<int64_t>(hp_.ssm_head_count);
  const auto groups = static_cast<int64_t>(hp_.ssm_group_count);
  const auto bc_width = static_cast<int64_t>(hp_.ssm_state_size) * groups;
  TensorView zxbcdt = backend::first_rows(zxbcdt_, n), xbc = backend::first_rows(xbc_, n);
  TensorView y = backend::first_rows(y_, n);

  seqs_.clear();
  for (size_t i = 0; i < batch.sequences.size(); ++i) {
    const backend::SequenceSlice& slice = batch.sequences[i];
    const int32_t slot = batch.state_slots[i];
    seqs_.push_back({slice.first_token, slice.n_tokens, batch.states->conv_window(slot, layer),
                     batch.states->ssm_state(slot, layer)});
  }
  backend_.matmul(*w.ssm_in, h, zxbcdt);
  TensorView z = column_range(zxbcdt, 0, inner);
  const TensorView conv_in = column_range(zxbcdt, inner, channels);
  const TensorView dt = column_range(zxbcdt, inner + channels, heads);
  backend_.ssm_conv(conv_in, *w.ssm_conv1d, *w.ssm_conv1d_b, seqs_, xbc);
  const backend::SsmScanWeights scan{&*w.ssm_a, &*w.ssm_d, &*w.ssm_dt_b, inner / heads, groups};
  backend_.ssm_scan(column_range(xbc, 0, inner), dt, column_range(xbc, inner, bc_width),
                    column_range(xbc, inner + bc_width, bc_width), scan, seqs_, y);
  backend_.swiglu(z, y, y);  // y * silu(z)
  // The gated norm: each group of the inner width normalized on its own, with its own weights.
  const int64_t width = inner / groups;
  for (int64_t g = 0; g < groups; ++g) {
    TensorView part = column_range(y, g * width, width);
    TensorView weight = backend::f32_matrix(w.ssm_norm->row<float>(g), width, 1);
    backend_.rms_norm(part, weight, static_cast<float>(hp_.norm_eps), part);
  }
  backend_.matmul(*w.ssm_out, y, h);
}

}  // namespace lumen::model
