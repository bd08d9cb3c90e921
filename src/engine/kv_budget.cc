#include "engine/kv_budget.h"

#include <algorithm>
#include <limits>
#include <string>

#include "engine/kv_cache_dtype.h"
#include "model/kv_cache.h"
#include "model/state_cache.h"
#include "util/error.h"
#include "util/system_memory.h"

namespace lumen::engine {

namespace {

// The longest sequence the pool is sized for.
int64_t longest_sequence(const EngineConfig& config, const model::HParams& hp) {
  const int64_t trained = hp.context_length > 0 ? static_cast<int64_t>(hp.context_length) : 4096;
  const int64_t longest = config.max_model_len > 0 ? config.max_model_len : trained;
  // An attention-free model's nominal KV only counts positions (model/hparams.h), and its files
  // carry an arbitrary context (llama.cpp's converter writes 2^20 for Mamba 2): without a
  // max_model_len the pool is sized for sequences of kStateModelContext tokens. So is a hybrid's
  // (the converter writes 2^20 for a granite-hybrid without rope), whose attention layers' K/V
  // is real: a longer context takes --max-model-len.
  constexpr int64_t kStateModelContext = 32768;
  if (model::has_recurrent_state(hp) && config.max_model_len <= 0) return std::min(longest, kStateModelContext);
  return longest;
}

bool fixed_kv_size(const EngineConfig& config) {
  return config.num_kv_blocks > 0 || config.kv_cache_full_sequences > 0;
}

size_t bytes_per_block(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                       const backend::Backend& backend) {
  if (config.block_size <= 0) fail("block size must be positive, not {}", config.block_size);
  // Before any sizing, so a backend or model that cannot hold the type says so first.
  const tensor::DType type = kv_tensor_type(config.kv_cache_dtype);
  model::check_kv_cache_type(backend, hp, type);
  return model::KvCache::bytes_per_page(hp, layout, config.block_size, type);
}

// The pool's blocks when `state_bytes` of the budget went to recurrent states.
int64_t kv_blocks_beside(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                         const backend::Backend& backend, uint64_t state_bytes) {
  const size_t per_block = bytes_per_block(config, hp, layout, backend);
  const int64_t null_blocks = layout.has_windows() ? 1 : 0;
  if (config.num_kv_blocks > 0) {
    if (config.num_kv_blocks < 2) fail("a KV cache needs at least 2 blocks, not {}", config.num_kv_blocks);
    return config.num_kv_blocks;
  }
  const int64_t longest = longest_sequence(config, hp);
  const int64_t pages = layout.pages_for(longest, config.block_size, config.max_num_batched_tokens);
  if (config.kv_cache_full_sequences > 0) {
    // One block more than the sequences can fill: admission keeps a block free (the watermark).
    return config.kv_cache_full_sequences * pages + 1 + null_blocks;
  }
  const uint64_t total = cache_budget_bytes(config, backend);
  const uint64_t budget = total - std::min(total, state_bytes);
  const auto blocks = static_cast<int64_t>(budget / per_block);
  if (blocks < 2) {
    fail("a KV cache of {} bytes holds {} blocks of {} bytes; at least 2 are needed", budget, blocks, per_block);
  }
  // More than every sequence at full length could never be used.
  const int64_t useful = std::max<int64_t>(config.max_num_seqs, 1) * pages + null_blocks;
  return std::min(blocks, useful);
}

}  // namespace

uint64_t cache_budget_bytes(const EngineConfig& config, const backend::Backend& backend) {
  if (config.kv_cache_bytes > 0) return static_cast<uint64_t>(config.kv_cache_bytes);
  if (const std::optional<backend::DeviceMemory> device = backend.device_memory()) {
    if (config.gpu_memory_utilization <= 0.0 || config.gpu_memory_utilization > 0.98) {
      fail("GPU memory utilization must be in (0, 0.98], not {}", config.gpu_memory_utilization);
    }
    return static_cast<uint64_t>(static_cast<double>(device->free_bytes) * config.gpu_memory_utilization);
  }
  if (config.kv_cache_ram_fraction <= 0.0 || config.kv_cache_ram_fraction > 0.95) {
    fail("KV cache RAM fraction must be in (0, 0.95], not {}", config.kv_cache_ram_fraction);
  }
  return static_cast<uint64_t>(static_cast<double>(available_ram_bytes()) * config.kv_cache_ram_fraction);
}

int64_t kv_blocks_for(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                      const backend::Backend& backend) {
  return kv_blocks_beside(config, hp, layout, backend, 0);
}

CacheSizes cache_sizes_for(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                           const backend::Backend& backend, const model::BackendSplit& split) {
  if (config.state_prefix_cache_bytes < 0) fail("state_prefix_cache_bytes must be >= 0 (0: off)");
  // Without prefix caching a snapshot could never be adopted (a hit adopts the prefix's blocks too).
  if (config.state_prefix_cache_bytes > 0 && (!model::has_recurrent_state(hp) || !config.enable_prefix_caching)) {
    fail(
        "a state prefix cache (state_prefix_cache_bytes, --state-prefix-cache-memory) is for state-space and RWKV "
        "models with prefix caching on{}",
        model::has_recurrent_state(hp) ? "" : fmt::format(", not the {} model", hp.architecture));
  }
  if (split.active()) {
    if (model::has_recurrent_state(hp)) fail("a state-space model runs on one backend only");
    // KvCache::part_layouts' order: the first backend's layers (when it has any), then the second's.
    const std::vector<kv::KvLayout> parts = model::KvCache::part_layouts(layout, split);
    int64_t blocks = std::numeric_limits<int64_t>::max();
    for (size_t p = 0; p < parts.size(); ++p) {
      const bool first = p == 0 && split.first_layer > 0;
      blocks = std::min(blocks, kv_blocks_for(config, hp, parts[p], first ? backend : *split.second));
    }
    return {blocks, 0};
  }
  if (!model::has_recurrent_state(hp)) return {kv_blocks_for(config, hp, layout, backend), 0};
  const uint64_t slot = model::StateCache::bytes_per_slot(hp);
  const uint64_t per_block = bytes_per_block(config, hp, layout, backend);
  // The snapshots are set aside first: the slots and the KV share what they leave.
  const uint64_t snapshots = static_cast<uint64_t>(config.state_prefix_cache_bytes) / slot;
  if (config.state_prefix_cache_bytes > 0 && snapshots == 0) {
    fail("a state prefix cache of {} bytes holds no snapshot of this {} model's state ({} bytes)",
         config.state_prefix_cache_bytes, hp.architecture, slot);
  }
  const uint64_t total = cache_budget_bytes(config, backend);
  const uint64_t budget = total - std::min(total, snapshots * slot);
  const auto wanted = static_cast<uint64_t>(std::max<int64_t>(config.max_num_seqs, 1));
  uint64_t slots = 0;
  uint64_t room = 0;  // the most the states may take
  if (fixed_kv_size(config)) {
    const uint64_t kv = static_cast<uint64_t>(kv_blocks_beside(config, hp, layout, backend, 0)) * per_block;
    room = budget - std::min(budget, kv);
    slots = std::min(wanted, room / slot);
  } else {
    // Each slot with room for one sequence of the longest length: the slots shrink with the
    // budget as the sequences they serve would. Below one such pair, one slot beside the KV's
    // minimum of 2 blocks still runs (shorter sequences).
    const uint64_t pages = static_cast<uint64_t>(
        layout.pages_for(longest_sequence(config, hp), config.block_size, config.max_num_batched_tokens));
    room = budget - std::min(budget, 2 * per_block);
    slots = std::min(wanted, budget / (slot + pages * per_block));
    if (slots == 0 && room >= slot) slots = 1;
  }
  if (slots == 0) {
    fail(
        "one sequence's recurrent state of this {} model takes {} bytes ({} layers), more than the {} bytes the "
        "cache memory budget has for it: raise the KV cache memory (kv_cache_bytes, --kv-cache-memory)",
        hp.architecture, slot, hp.block_count, room);
  }
  return {kv_blocks_beside(config, hp, layout, backend, slots * slot + snapshots * slot), static_cast<int64_t>(slots),
          static_cast<int64_t>(snapshots)};
}

}  // namespace lumen::engine
