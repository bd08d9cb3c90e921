#pragma once
// `--kv-cache-dtype f16|bf16|q8_0|q4_0|fp8_e4m3`: the element type of the KV cache (vLLM's
// flag; llama.cpp's -ctk / -ctv with one type for both), on every command that makes one. An
// unknown name is refused while the command line is parsed, before any model loads.
// `--no-kv-cache-rotation` stores a quantized cache's heads unrotated (EngineConfig::kv_cache_rotation).
#include <CLI/CLI.hpp>
#include <string>

#include "lumen/engine_config.h"

namespace lumen::cli {

struct KvCacheDtypeFlag {
  std::string name = "f16";
  bool no_rotation = false;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--kv-cache-dtype", name,
                    "KV cache element type: f16, bf16, q8_0, q4_0 or fp8_e4m3 (CUDA: f16, bf16 and fp8_e4m3)")
        ->capture_default_str()
        ->check(CLI::Validator(
            [](std::string& text) -> std::string {
              if (parse_kv_cache_dtype(text)) return {};
              return "unknown KV cache dtype '" + text + "' (choose one of " + std::string(kv_cache_dtype_choices()) + ")";
            },
            "DTYPE"));
    cmd->add_flag("--no-kv-cache-rotation", no_rotation,
                  "Store a quantized KV cache's heads as they are, not Hadamard-rotated (to measure what the rotation buys)");
  }

  // Call after parsing (the validator has accepted the name).
  KvCacheDtype value() const { return parse_kv_cache_dtype(name).value_or(KvCacheDtype::F16); }
  bool rotation() const { return !no_rotation; }
};

}  // namespace lumen::cli
