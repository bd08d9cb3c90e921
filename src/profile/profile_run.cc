#include "profile/profile_run.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "backend/cpu/cpu_backend.h"
#include "engine/device.h"
#include "engine/kv_cache_dtype.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"
#include "util/error.h"

namespace lumen::profile {

namespace {

constexpr int64_t kBlockSize = 16;
constexpr int64_t kPrefillChunk = 512;  // how the cached context is filled (not timed)

int64_t blocks_for(int64_t positions) { return (positions + kBlockSize - 1) / kBlockSize; }

}  // namespace

std::string StepShape::label() const {
  if (verify) return fmt::format("verify {} rows at context {}", tokens, context);
  if (decode) return fmt::format("decode batch {} at context {}", batch, context);
  return batch == 1 ? fmt::format("prefill {}", tokens) : fmt::format("prefill {} x {}", batch, tokens);
}

ProfileRun::ProfileRun(const std::string& model_path, unsigned threads, KvCacheDtype kv_cache_dtype,
                       const std::string& device)
    : model_path_(model_path), kv_type_(engine::kv_tensor_type(kv_cache_dtype)) {
  backend_ = engine::make_backend(device, threads);
  cpu_ = dynamic_cast<backend::CpuBackend*>(backend_.get());
  profiler_ = std::make_unique<OpProfiler>(*backend_, pool());  // before the weights: it names them
  model_ = std::make_unique<engine::LoadedModel>(engine::LoadedModel::load(model_path, *backend_));
  profiler_->name_weights(*model_->file);
  model::check_kv_cache_type(*backend_, model_->hparams, kv_type_);
}

std::string ProfileRun::description() const {
  const auto& hp = model_->hparams;
  return fmt::format("{} ({}, {} layers, {} embedding)", model_path_.substr(model_path_.find_last_of('/') + 1),
                     hp.architecture, hp.block_count, hp.embedding_length);
}

ProfileRun::~ProfileRun() {
  model_.reset();  // the weights' views before the backend
  profiler_.reset();
}

backend::Backend& ProfileRun::backend() { return *backend_; }

unsigned ProfileRun::threads() const { return cpu_ != nullptr ? cpu_->pool().size() : 0; }

ThreadPool* ProfileRun::pool() { return cpu_ != nullptr ? &cpu_->pool() : nullptr; }

double WeightStream::bytes_for(int64_t tokens) const {
  if (experts == 0 || used == 0 || tokens <= 0) return dense_bytes + expert_bytes;
  const double unchosen = std::pow(1.0 - static_cast<double>(std::min(used, experts)) / static_cast<double>(experts),
                                   static_cast<double>(tokens));
  return dense_bytes + expert_bytes * (1.0 - unchosen);
}

WeightStream ProfileRun::weight_stream() const {
  const std::vector<gguf::TensorInfo>& tensors = model_->file->tensors();
  const bool untied =
      std::any_of(tensors.begin(), tensors.end(), [](const gguf::TensorInfo& t) { return t.name == "output.weight"; });
  WeightStream stream{0, 0, model_->hparams.expert_count, model_->hparams.expert_used_count};
  for (const gguf::TensorInfo& t : tensors) {
    if (untied && t.name == "token_embd.weight") continue;
    const bool expert = t.name.find("_exps.") != std::string::npos;
    (expert ? stream.expert_bytes : stream.dense_bytes) += static_cast<double>(t.bytes);
  }
  return stream;
}

ShapeProfile ProfileRun::profile(const StepShape& shape, int repetitions) {
  if (shape.batch < 1 || shape.tokens < 1 || shape.context < 0)
    fail("a step needs at least one sequence and one token");
  const int64_t positions = shape.context + shape.tokens;
  if (positions > static_cast<int64_t>(model_->hparams.context_length) && model_->hparams.context_length > 0) {
    fail("{} positions do not fit the model's {}-token context", positions, model_->hparams.context_length);
  }
  const int64_t per_seq_blocks = blocks_for(positions);
  model::KvCache cache(*backend_, model_->hparams, shape.batch * per_seq_blocks, kBlockSize, kv_type_);
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(shape.batch));
  for (int64_t s = 0; s < shape.batch; ++s) {
    tables[static_cast<size_t>(s)].resize(static_cast<size_t>(per_seq_blocks));
    std::iota(tables[static_cast<size_t>(s)].begin(), tables[static_cast<size_t>(s)].end(),
              static_cast<int32_t>(s * per_seq_blocks));
  }
  std::mt19937 rng(1234);
  const auto vocab = static_cast<uint32_t>(model_->hparams.vocab_size);
  auto random_tokens = [&](int64_t n) {
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % vocab);
    return tokens;
  };
  // Where the logits land: the backend's host memory (page-locked on a device, so the copy back
  // does not wait on its own), room for the measured step's rows.
  const size_t logit_rows_max = static_cast<size_t>(shape.verify ? shape.new_tokens() : shape.batch);
  const std::unique_ptr<backend::Buffer> logits_buffer =
      backend_->allocate_host(std::max<size_t>(logit_rows_max, 1) * model_->hparams.vocab_size * sizeof(float));
  auto* logits = static_cast<float*>(logits_buffer->data());
  // A state-space model's sequences each run from their own state slot (slot s for sequence s),
  // copied like the KV from sequence 0's after the context.
  std::unique_ptr<model::StateCache> states;
  std::vector<int32_t> slots(static_cast<size_t>(shape.batch));
  std::iota(slots.begin(), slots.end(), 0);
  if (model::has_recurrent_state(model_->hparams)) {
    states = std::make_unique<model::StateCache>(*backend_, model_->hparams, shape.batch);
  }
  auto with_states = [&](model::ForwardBatch batch, size_t n_sequences) {
    if (states) {
      batch.states = states.get();
      batch.state_slots = std::span(slots).first(n_sequences);
    }
    return batch;
  };

  // The cached context: sequence 0's, chunk by chunk, then copied to every other sequence.
  for (int64_t start = 0; start < shape.context; start += kPrefillChunk) {
    const int64_t n = std::min(kPrefillChunk, shape.context - start);
    const std::vector<int32_t> tokens = random_tokens(n);
    std::vector<int32_t> pos(static_cast<size_t>(n));
    std::iota(pos.begin(), pos.end(), static_cast<int32_t>(start));
    const backend::SequenceSlice slice{0, n, start, tables[0]};
    const int32_t last_row = static_cast<int32_t>(n - 1);
    model_->transformer->forward(with_states({tokens, pos, std::span(&slice, 1), std::span(&last_row, 1)}, 1), cache,
                                 logits);
  }
  for (int64_t s = 1; s < shape.batch; ++s) {
    if (states) states->copy(0, static_cast<int32_t>(s));
    for (int64_t b = 0; b < blocks_for(shape.context); ++b)
      cache.copy_block(tables[0][static_cast<size_t>(b)], tables[static_cast<size_t>(s)][static_cast<size_t>(b)]);
  }

  // The measured step: every sequence's new tokens, logits where the engine would take them.
  const std::vector<int32_t> tokens = random_tokens(shape.new_tokens());
  std::vector<int32_t> pos, logit_rows;
  std::vector<backend::SequenceSlice> slices;
  for (int64_t s = 0; s < shape.batch; ++s) {
    for (int64_t i = 0; i < shape.tokens; ++i) pos.push_back(static_cast<int32_t>(shape.context + i));
    slices.push_back({s * shape.tokens, shape.tokens, shape.context, tables[static_cast<size_t>(s)]});
    for (int64_t i = shape.verify ? 0 : shape.tokens - 1; i < shape.tokens; ++i) {
      logit_rows.push_back(static_cast<int32_t>(s * shape.tokens + i));
    }
  }
  // A state model's repeated steps each advance its states (from zero for a prefill): the same
  // work every time.
  const model::ForwardBatch batch = with_states({tokens, pos, slices, logit_rows}, slices.size());
  auto step = [&] { model_->transformer->forward(batch, cache, logits); };

  step();  // warm-up: packs weights, sizes scratch buffers
  ShapeProfile out{shape, {}, 0, {}};
  std::vector<StepRecording> recorded;
  std::vector<double> plain_ns;
  const uint64_t replayed_before = backend_->step_replay_stats().replayed;
  const backend::StepDeviceTime device_before = backend_->step_device_time();
  for (int r = 0; r < repetitions; ++r) {
    // Alternating, so a drift in the machine's speed touches both alike.
    profiler_->start_recording();
    step();
    recorded.push_back(profiler_->stop_recording());
    // Unobserved, the step runs as the engine runs it (a device may replay it from a recording),
    // and a device times it on its own clock.
    backend_->remove_observer(profiler_.get());
    backend_->time_steps(true);
    const auto start = std::chrono::steady_clock::now();
    step();
    plain_ns.push_back(std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count());
    backend_->time_steps(false);
    backend_->add_observer(profiler_.get());
  }
  const backend::StepDeviceTime device_after = backend_->step_device_time();
  if (device_after.steps > device_before.steps) {
    out.unrecorded_device_step_ns = (device_after.seconds - device_before.seconds) * 1e9 /
                                    static_cast<double>(device_after.steps - device_before.steps);
  }
  out.replayed_steps = backend_->step_replay_stats().replayed - replayed_before;
  out.breakdown = break_down(
      recorded, [&](uint32_t id) { return profiler_->op_name(id); }, threads());
  std::sort(plain_ns.begin(), plain_ns.end());
  out.unrecorded_step_ns = plain_ns.empty() ? 0 : plain_ns[plain_ns.size() / 2];
  if (!recorded.empty()) out.last = std::move(recorded.back());
  return out;
}

}  // namespace lumen::profile
