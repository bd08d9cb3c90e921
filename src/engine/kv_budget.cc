#include "engine/kv_budget.h"

#include <algorithm>
#include <fstream>
#include <string>

#include "engine/kv_cache_dtype.h"
#include "model/kv_cache.h"
#include "util/error.h"

namespace lumen::engine {

uint64_t available_ram_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  uint64_t value = 0;
  std::string unit;
  while (meminfo >> key >> value >> unit) {
    if (key == "MemAvailable:") return value * 1024;
  }
  return 0;
}

int64_t kv_blocks_for(const EngineConfig& config, const model::HParams& hp, const kv::KvLayout& layout,
                      const backend::Backend& backend) {
  if (config.block_size <= 0) fail("block size must be positive, not {}", config.block_size);
  // Before any sizing, so a backend or model that cannot hold the type says so first.
  const tensor::DType type = kv_tensor_type(config.kv_cache_dtype);
  model::check_kv_cache_type(backend, hp, type);
  const int64_t null_blocks = layout.has_windows() ? 1 : 0;
  if (config.num_kv_blocks > 0) {
    if (config.num_kv_blocks < 2) fail("a KV cache needs at least 2 blocks, not {}", config.num_kv_blocks);
    return config.num_kv_blocks;
  }
  const int64_t trained = hp.context_length > 0 ? static_cast<int64_t>(hp.context_length) : 4096;
  int64_t longest = config.max_model_len > 0 ? config.max_model_len : trained;
  // An attention-free model's nominal KV only counts positions (model/hparams.h), and its files
  // carry an arbitrary context (llama.cpp's converter writes 2^20 for Mamba 2): without a
  // max_model_len the pool is sized for sequences of kStateModelContext tokens.
  constexpr int64_t kStateModelContext = 32768;
  if (hp.attention_free && config.max_model_len <= 0) longest = std::min(longest, kStateModelContext);
  if (config.kv_cache_full_sequences > 0) {
    // One block more than the sequences can fill: admission keeps a block free (the watermark).
    return config.kv_cache_full_sequences *
               layout.pages_for(longest, config.block_size, config.max_num_batched_tokens) +
           1 + null_blocks;
  }
  const size_t per_block = model::KvCache::bytes_per_page(hp, layout, config.block_size, type);
  uint64_t budget = 0;
  if (config.kv_cache_bytes > 0) {
    budget = static_cast<uint64_t>(config.kv_cache_bytes);
  } else if (const std::optional<backend::DeviceMemory> device = backend.device_memory()) {
    if (config.gpu_memory_utilization <= 0.0 || config.gpu_memory_utilization > 0.98) {
      fail("GPU memory utilization must be in (0, 0.98], not {}", config.gpu_memory_utilization);
    }
    budget = static_cast<uint64_t>(static_cast<double>(device->free_bytes) * config.gpu_memory_utilization);
  } else {
    if (config.kv_cache_ram_fraction <= 0.0 || config.kv_cache_ram_fraction > 0.95) {
      fail("KV cache RAM fraction must be in (0, 0.95], not {}", config.kv_cache_ram_fraction);
    }
    budget = static_cast<uint64_t>(static_cast<double>(available_ram_bytes()) *
                                   config.kv_cache_ram_fraction);
  }
  const auto blocks = static_cast<int64_t>(budget / per_block);
  if (blocks < 2) {
    fail("a KV cache of {} bytes holds {} blocks of {} bytes; at least 2 are needed", budget,
         blocks, per_block);
  }
  // More than every sequence at full length could never be used.
  const int64_t useful = std::max<int64_t>(config.max_num_seqs, 1) *
                             layout.pages_for(longest, config.block_size, config.max_num_batched_tokens) +
                         null_blocks;
  return std::min(blocks, useful);
}

}  // namespace lumen::engine
